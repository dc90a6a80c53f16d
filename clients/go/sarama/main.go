// highwater's worker for Sarama (github.com/IBM/sarama): one producer or one consumer, driven
// over the worker protocol (docs/adding-a-client.md, version 3) on stdin/stdout; stderr is the
// log, Sarama's own (sarama.Logger) included. It is built once per Sarama version, in the cache
// (harness/clients/sarama.py sets the version in a copy of this module and runs `go build`).
//
// What Sarama does not tell an application, and how this worker learns it:
//
//   - the broker that served a record (KIP-392's follower fetching): the line Sarama logs when a
//     partition moves to a broker, and a consumer interceptor that sees each record before it
//     is handed over, in an order Sarama keeps (served.go says why it holds);
//
//   - an out-of-range reset: Sarama has no KIP-320 (no leader epochs on records, no truncation
//     detection); a fetch out of range stops the partition's consumer with ErrOffsetOutOfRange,
//     and this worker starts another where the reset policy says, reported as a `reset` to the
//     offset it landed on (assign.go; in a group the session ends, and the member starts again
//     from the committed offset: group.go);
//
//   - whether a commit happened: ConsumerGroupSession.Commit and OffsetManager.Commit answer
//     nothing, so this worker sends the OffsetCommit itself (consumer.go's commit);
//
//   - a seek of a group member's partition: Sarama cannot move a claimed partition, so the
//     worker ends the group session, rejoins with its member id and moves the claim's start in
//     the next session's Setup (group.go);
//
//   - whether an abort proves anything (producer.go's abortProof).
//
// Refused in one line at the start: TLS/SASL (not here yet), KIP-848's consumer protocol (Sarama
// has none), an idempotent producer without acks=all or with no retries (Sarama's own rules),
// an auto.offset.reset other than earliest or latest. Sarama has no delivery timeout.
package main

import (
	"fmt"
	"log"
	"os"
	"time"

	"highwater/protocol"

	"github.com/IBM/sarama"
)

// settings are the neutral settings (protocol.Settings), mapped to Sarama's Config below.
// group_remote_assignor has nothing to map to: Sarama has no KIP-848.
type settings struct{ protocol.Settings }

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// version is the Sarama version this worker was built against.
func version() string { return protocol.ModuleVersion("github.com/IBM/sarama") }

// saramaLog is where sarama.Logger writes: the worker's log (stderr), in UTC with microseconds
// as protocol.Logf's lines are.
func saramaLog() *log.Logger {
	return log.New(os.Stderr, "[Sarama] ", log.LstdFlags|log.Lmicroseconds|log.LUTC)
}

// common is the configuration of both roles.
func (s *settings) common() (*sarama.Config, error) {
	if p := s.Security.Protocol; p != "" && p != "PLAINTEXT" {
		return nil, fmt.Errorf("the Sarama worker speaks PLAINTEXT only, not %s", p)
	}
	cfg := sarama.NewConfig()
	// the protocol level Sarama assumes the brokers speak, from which it picks each request's
	// version: fixed at 3.0, which every Kafka 3.x and 4.x broker serves (4.0 dropped only
	// versions older than 2.1's, KIP-896), rather than Sarama's default, which differs from one
	// Sarama version to another; 3.0 has what this worker relies on: Fetch v11+ with the rack
	// (KIP-392), InitProducerId v3+ (an epoch bump instead of a fatal error, KIP-360),
	// TxnOffsetCommit v3 with the member's generation (KIP-447, from Sarama 1.50.2)
	cfg.Version = sarama.V3_0_0_0
	if s.ClientID != "" {
		cfg.ClientID = s.ClientID
	}
	if s.MetadataMaxAgeMs > 0 {
		cfg.Metadata.RefreshFrequency = ms(s.MetadataMaxAgeMs)
	}
	// the metadata of the topics in use only, as Java's clients keep it, and none asked for at
	// the start: with Metadata.Full (Sarama's default) NewClient asks for every topic's and
	// fails when no broker answers, so a cluster out of reach would fail the worker's start
	cfg.Metadata.Full = false
	return cfg, nil
}

// producerConfig maps the producer settings (ProducerSettings).
func (s *settings) producerConfig() (*sarama.Config, error) {
	cfg, err := s.common()
	if err != nil {
		return nil, err
	}
	acks := s.AcksText()
	switch acks {
	case "all", "-1", "":
		cfg.Producer.RequiredAcks = sarama.WaitForAll
	case "1":
		cfg.Producer.RequiredAcks = sarama.WaitForLocal
	case "0":
		cfg.Producer.RequiredAcks = sarama.NoResponse
	default:
		return nil, fmt.Errorf("unknown acks %s", acks)
	}
	// every send carries its partition (the harness chooses it)
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	// uncompressed, as every other client's worker writes
	cfg.Producer.Compression = sarama.CompressionNone
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Retry.Max = s.Retries
	if s.RequestTimeoutMs > 0 {
		// how long a broker may hold a produce request for its acks (the request's timeout,
		// which Java sets from request.timeout.ms too); the client side waits up to
		// Net.ReadTimeout, Sarama's default (30 s)
		cfg.Producer.Timeout = ms(s.RequestTimeoutMs)
	}
	// linger: Sarama sends what it has gathered every Flush.Frequency (0: at once)
	cfg.Producer.Flush.Frequency = ms(s.LingerMs)
	// no delivery timeout (delivery_timeout_ms): Sarama has none; a send ends when it succeeds
	// or after Producer.Retry.Max retries (Producer.Retry.Backoff apart), however long that takes
	idempotent := s.Idempotence || s.TransactionalID != nil // a transactional producer is idempotent
	if idempotent {
		// Sarama's own rules for an idempotent producer (Config.Validate), the first two Java's
		// as well: acks=all, at least one retry, one request in flight per broker
		if cfg.Producer.RequiredAcks != sarama.WaitForAll {
			return nil, fmt.Errorf("Sarama's idempotent producer needs acks=all, not %s", acks)
		}
		if s.Retries < 1 {
			return nil, fmt.Errorf("Sarama's idempotent producer needs retries >= 1, not %d", s.Retries)
		}
		cfg.Producer.Idempotent = true
		cfg.Net.MaxOpenRequests = 1
	} else if s.MaxInFlight > 0 {
		cfg.Net.MaxOpenRequests = s.MaxInFlight
	}
	if s.TransactionalID != nil {
		cfg.Producer.Transaction.ID = *s.TransactionalID
		if s.TransactionTimeoutMs > 0 {
			cfg.Producer.Transaction.Timeout = ms(s.TransactionTimeoutMs)
		}
	}
	return cfg, cfg.Validate()
}

// consumerConfig maps the consumer settings (ConsumerSettings).
func (s *settings) consumerConfig() (*sarama.Config, error) {
	cfg, err := s.common()
	if err != nil {
		return nil, err
	}
	switch s.GroupProtocol {
	case "", "classic":
	case "consumer":
		return nil, fmt.Errorf("Sarama %s has no KIP-848 consumer protocol (group_protocol consumer)", version())
	default:
		return nil, fmt.Errorf("unknown group protocol %s", s.GroupProtocol)
	}
	switch s.AutoOffsetReset {
	case "earliest", "":
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	case "latest":
		cfg.Consumer.Offsets.Initial = sarama.OffsetNewest
	default:
		return nil, fmt.Errorf("Sarama resets to the earliest or the latest offset only, not %s", s.AutoOffsetReset)
	}
	switch s.IsolationLevel {
	case "read_uncommitted", "":
		cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	case "read_committed":
		cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	default:
		return nil, fmt.Errorf("unknown isolation level %s", s.IsolationLevel)
	}
	if s.ClientRack != nil {
		cfg.RackID = *s.ClientRack // KIP-392: the brokers may name a replica of this rack to fetch from
	}
	if s.FetchMaxWaitMs > 0 {
		cfg.Consumer.MaxWaitTime = ms(s.FetchMaxWaitMs)
	}
	if s.RequestTimeoutMs > 0 && s.GroupID == nil {
		// request.timeout.ms is how long Java's consumer waits for any answer, Net.ReadTimeout
		// Sarama's (30 s by default): a fetch sent to a broker that is paused or cut off holds
		// every partition the consumer reads from it that long. A group member keeps the
		// default, since Sarama reads a JoinGroup answer, which the coordinator may hold up to the
		// rebalance timeout (60 s), under the same deadline (Java extends that one request's)
		cfg.Net.ReadTimeout = ms(s.RequestTimeoutMs)
	}
	// errors on the Errors channels (read by the worker), not only in the log: the worker acts
	// on an out-of-range partition
	cfg.Consumer.Return.Errors = true
	// offsets are committed by the worker's commit alone (consumer.go)
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	if s.SessionTimeoutMs != nil {
		cfg.Consumer.Group.Session.Timeout = ms(*s.SessionTimeoutMs)
		// Sarama wants the heartbeat interval below the session timeout: its default (3 s), or
		// a third of a shorter session (Java's default ratio)
		if hb := cfg.Consumer.Group.Session.Timeout / 3; hb < cfg.Consumer.Group.Heartbeat.Interval {
			cfg.Consumer.Group.Heartbeat.Interval = hb
		}
	}
	// the group's rebalance strategy is Sarama's default (range, eager)
	return cfg, cfg.Validate()
}

// main runs the worker protocol's command loop (protocol.Serve) with this worker's roles.
func main() { protocol.Serve(version(), start) }

func start(cmd *protocol.Command, o *protocol.Out) (protocol.Role, error) {
	var s settings
	if err := protocol.ReadSettings(cmd, "sarama", &s); err != nil {
		return nil, err
	}
	switch cmd.Role {
	case "producer":
		sarama.Logger = saramaLog()
		conf, err := s.producerConfig()
		if err != nil {
			return nil, err
		}
		return newProducer(s, conf, o)
	case "consumer":
		served := newServedBy(saramaLog())
		sarama.Logger = served // before any client: the broker a partition moves to (served.go)
		conf, err := s.consumerConfig()
		if err != nil {
			return nil, err
		}
		conf.Consumer.Interceptors = []sarama.ConsumerInterceptor{served}
		return newConsumer(s, conf, served, o), nil
	}
	return nil, fmt.Errorf("the Sarama worker has no role %s", cmd.Role)
}
