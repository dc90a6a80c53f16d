package main

import (
	"log"
	"sync"

	"highwater/protocol"

	"github.com/IBM/sarama"
)

// subscriptionAdded is the line a broker consumer logs when a partition moves to it, exactly as
// Sarama writes it (consumer.go's updateSubscriptions, the same from 1.40 to 1.61 at least).
const subscriptionAdded = "consumer/broker/%d added subscription to %s/%d\n"

// servedBy learns which broker serves each partition, and tags each record with it: Sarama does
// not say which broker served a record, and with a rack (KIP-392) its partition consumer moves
// on its own to the replica a fetch response prefers, and back to the leader. Two things Sarama
// does tell it, in an order it keeps:
//
//   - a broker consumer logs subscriptionAdded to sarama.Logger when a partition moves to it
//     (updateSubscriptions, at the top of its fetch loop), before its first fetch that includes
//     the partition: this logger (Printf) records that broker as the partition's;
//
//   - the partition's one responseFeeder goroutine runs the consumer interceptors
//     (Config.Consumer.Interceptors) on each record of a fetch response right before it puts
//     the record on Messages(): this interceptor (OnConsume) tags the record with its
//     partition's broker.
//
// A partition leaves a broker only after the interceptors have run on every record of that
// broker's last response to it: the broker consumer waits for each partition's feeder to have
// handed over its records (bc.acks.Wait()) before it reads the responses' results
// (handleResponses), where it lets a partition go to another broker (a preferred replica, a
// leader change, an error); the partition's dispatcher then subscribes it to the next broker,
// whose consumer logs the line before it fetches. (A feeder that times out handing records to
// the application acks early, but puts the partition back on the same broker, after its
// remaining records.) A new partition consumer of a partition starts only after the previous one
// has closed its Messages(): the worker waits for it (assign mode), Sarama for every claim of a
// session before the next (subscribe mode). So the broker logged last for a partition when a
// record is intercepted is the broker that served it.
type servedBy struct {
	out     *log.Logger
	mu      sync.Mutex
	current map[protocol.TopicPartition]int32
	record  map[*sarama.ConsumerMessage]int32
}

func newServedBy(out *log.Logger) *servedBy {
	return &servedBy{out: out, current: map[protocol.TopicPartition]int32{}, record: map[*sarama.ConsumerMessage]int32{}}
}

// Print, Printf and Println make servedBy a sarama.StdLogger: every line goes to the log.
func (s *servedBy) Print(v ...any)   { s.out.Print(v...) }
func (s *servedBy) Println(v ...any) { s.out.Println(v...) }

func (s *servedBy) Printf(format string, v ...any) {
	if format == subscriptionAdded && len(v) == 3 {
		broker, ok1 := v[0].(int32)
		topic, ok2 := v[1].(string)
		partition, ok3 := v[2].(int32)
		if ok1 && ok2 && ok3 {
			s.mu.Lock()
			s.current[protocol.TopicPartition{Topic: topic, Partition: partition}] = broker
			s.mu.Unlock()
		}
	}
	s.out.Printf(format, v...)
}

// OnConsume makes servedBy a sarama.ConsumerInterceptor.
func (s *servedBy) OnConsume(m *sarama.ConsumerMessage) {
	s.mu.Lock()
	if broker, ok := s.current[protocol.TopicPartition{Topic: m.Topic, Partition: m.Partition}]; ok {
		s.record[m] = broker
	}
	s.mu.Unlock()
}

// take is the broker that served m (-1: unknown), forgotten once asked.
func (s *servedBy) take(m *sarama.ConsumerMessage) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	broker, ok := s.record[m]
	if !ok {
		return -1
	}
	delete(s.record, m)
	return broker
}

// forget drops m's tag (a record the worker drops without returning it).
func (s *servedBy) forget(m *sarama.ConsumerMessage) {
	s.mu.Lock()
	delete(s.record, m)
	s.mu.Unlock()
}

// forgetAll drops every tag: a group session ended, and every record of it not yet returned is
// dropped (Sarama drains a claim's records it had not handed over when it closes the claim).
func (s *servedBy) forgetAll() {
	s.mu.Lock()
	clear(s.record)
	s.mu.Unlock()
}
