// Sarama (github.com/IBM/sarama) alone, for benchmarks/client_throughput.py's bare rows: the
// settings highwater's Sarama worker gives the library for the benchmark's producer and
// consumer, no worker protocol, no history. client_throughput.py's go_bare builds it once per
// Sarama version in the cache, as the worker is built (a copy of this module, `go mod edit
// -require`, `go mod tidy`, `go build`); its go.mod names the worker's default version. One JSON
// argument, one JSON line out, on failure one line on stderr and exit status 1: the argument, the
// line, the clock of the timed part and main are ../bench's (highwater/bench), shared by the bare
// programs.
//
//	produce: {"mode": "produce", "bootstrap": [...], "topic": t, "records": n, "size": b, "partitions": p}
//	  records go to the partitions in turn through the AsyncProducer, values "v<i>:" padded with
//	  '.' to b bytes; timed from the first send until each came back on Successes() or Errors(),
//	  an error if any send failed.
//	consume: {"mode": "consume", "bootstrap": [...], "topic": t, "records": n, "partitions": p}
//	  each partition's log start asked (GetOffset, OffsetOldest) before the clock starts, as the
//	  worker's seek_to_beginning does before the harness's first poll; then, as the worker's first
//	  poll does, a PartitionConsumer per partition started there, each in its own goroutine;
//	  timed until n records with values came out of their Messages() channels.
//
// The settings are the worker's (clients/go/sarama/main.go: common, producerConfig,
// consumerConfig) for what the benchmark asks (client_throughput.py's bench_producer_settings and
// the default ConsumerSettings): protocol level 3.0 (Config.Version), Metadata.Full off; producer
// acks=all (WaitForAll), not idempotent, no compression, the manual partitioner, Retry.Max 3,
// Producer.Timeout 5 s, Flush.Frequency 2 ms (linger), Net.MaxOpenRequests 1 (Sarama has no
// delivery timeout); consumer from the oldest offset, read_uncommitted, MaxWaitTime 500 ms,
// Return.Errors on, auto commit off, metadata refreshed every 5 s. Left out, as highwater's own
// work: the worker's consumer interceptor and log reader (the broker that served each record), the
// channel its poll reads, Sarama's log (sarama.Logger stays Sarama's default, discarding, so stderr
// holds only the error line).
package main

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"highwater/bench"
)

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// common is the configuration of both roles (the worker's common).
func common(a bench.Args) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V3_0_0_0
	cfg.ClientID = "bare-" + a.Topic
	cfg.Metadata.Full = false
	return cfg
}

func produce(a bench.Args) (bench.Result, error) {
	cfg := common(a)
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Retry.Max = 3
	cfg.Producer.Timeout = ms(5000)
	cfg.Producer.Flush.Frequency = ms(2)
	cfg.Net.MaxOpenRequests = 1
	if err := cfg.Validate(); err != nil {
		return bench.Result{}, err
	}
	// closed on success only: on a failure the process ends at once (bench.Main)
	client, err := sarama.NewClient(a.Bootstrap, cfg)
	if err != nil {
		return bench.Result{}, err
	}
	ap, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		return bench.Result{}, err
	}
	values := make([]string, a.Records)
	for i := range values {
		v := fmt.Sprintf("v%d:", i)
		if len(v) < a.Size {
			v += strings.Repeat(".", a.Size-len(v))
		}
		values[i] = v
	}
	var (
		failed   int
		first    error // the first failed send's
		outcomes sync.WaitGroup
		readers  sync.WaitGroup
	)
	outcomes.Add(a.Records)
	readers.Add(2)
	go func() {
		defer readers.Done()
		for range ap.Successes() {
			outcomes.Done()
		}
	}()
	go func() { // the only writer of failed and first: read after the readers ended
		defer readers.Done()
		for e := range ap.Errors() {
			if failed++; first == nil {
				first = e.Err
			}
			outcomes.Done()
		}
	}()
	c := bench.StartClock()
	for i, v := range values {
		ap.Input() <- &sarama.ProducerMessage{Topic: a.Topic, Partition: int32(i) % a.Partitions, Value: sarama.StringEncoder(v)}
	}
	done := make(chan struct{})
	go func() {
		outcomes.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		return bench.Result{}, fmt.Errorf("sends still without an outcome 60 s after the last send")
	}
	r := c.End(a.Records)
	ap.AsyncClose()
	readers.Wait()
	if failed > 0 {
		return bench.Result{}, fmt.Errorf("%d of %d sends failed, the first: %v", failed, a.Records, first)
	}
	_ = client.Close() // the measurement is taken: a failed close changes nothing
	return r, nil
}

func consume(a bench.Args) (bench.Result, error) {
	cfg := common(a)
	cfg.Metadata.RefreshFrequency = ms(5000)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	cfg.Consumer.MaxWaitTime = ms(500)
	cfg.Consumer.Return.Errors = true
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	if err := cfg.Validate(); err != nil {
		return bench.Result{}, err
	}
	// closed on success only: on a failure the process ends at once (bench.Main)
	client, err := sarama.NewClient(a.Bootstrap, cfg)
	if err != nil {
		return bench.Result{}, err
	}
	sc, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return bench.Result{}, err
	}
	starts := make([]int64, a.Partitions)
	for p := range a.Partitions {
		if starts[p], err = client.GetOffset(a.Topic, p, sarama.OffsetOldest); err != nil {
			return bench.Result{}, fmt.Errorf("the log start of %s-%d: %w", a.Topic, p, err)
		}
	}
	var (
		got     atomic.Int64 // records with values, every partition's
		mu      sync.Mutex
		last    error                      // the last partition error, for the timeout's message
		pcs     []sarama.PartitionConsumer // the partition consumers started (mu)
		running sync.WaitGroup             // the partitions' goroutines
		failed  = make(chan error, a.Partitions)
		done    = make(chan struct{})
	)
	c := bench.StartClock()
	running.Add(int(a.Partitions))
	for p := range a.Partitions {
		go func() {
			defer running.Done()
			pc, err := sc.ConsumePartition(a.Topic, p, starts[p])
			if err != nil {
				failed <- fmt.Errorf("consuming %s-%d: %w", a.Topic, p, err)
				return
			}
			mu.Lock()
			pcs = append(pcs, pc)
			mu.Unlock()
			go func() {
				for e := range pc.Errors() {
					mu.Lock()
					last = e
					mu.Unlock()
				}
			}()
			for m := range pc.Messages() {
				if m.Value != nil && got.Add(1) == int64(a.Records) {
					close(done)
				}
			}
		}()
	}
	select {
	case <-done:
	case err := <-failed:
		return bench.Result{}, err
	case <-time.After(120 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		return bench.Result{}, fmt.Errorf("read %d of %d records within 120 s (last partition error: %v)", got.Load(), a.Records, last)
	}
	r := c.End(a.Records)
	// every partition consumer closed before the client (Sarama's order), each goroutine done
	// once its Messages() channel closed
	mu.Lock()
	for _, pc := range pcs {
		pc.AsyncClose()
	}
	mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		running.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		// the measurement is taken: a failed close changes nothing
		_ = sc.Close()
		_ = client.Close()
	case <-time.After(10 * time.Second): // the process ends anyway
	}
	return r, nil
}

func main() { bench.Main("sarama", produce, consume) }
