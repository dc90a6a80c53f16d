// highwater's worker for franz-go (github.com/twmb/franz-go): one producer, one consumer or one
// share consumer (share_kip932.go), driven over the worker protocol (docs/adding-a-client.md,
// version 3) on stdin/stdout; stderr is the log. It is built once per franz-go version, in the
// cache (harness/clients/franz_go.py sets the version in a copy of this module and runs `go
// build`).
//
// What franz-go does not tell an application, and how this worker learns it:
//
//   - the broker that served a record: a hook sees each batch read from a fetch response with
//     the broker it came from (HookFetchBatchRead), then each record as it is buffered
//     (HookFetchRecordBuffered), in the same source goroutine, so each buffered record is
//     tagged with the broker of its partition's last batch;
//
//   - a truncation (KIP-320) or an out-of-range reset below the consumed position: franz-go
//     handles both itself and reports both as *kgo.ErrDataLoss in a poll's errors, which this
//     worker reports as a position change to the new offset, `truncation` when the new offset is
//     the divergence point the leader names for the epoch consumed, else `reset` (lossReason);
//
//   - a transaction's consumer offsets (send_offsets): franz-go adds offsets to a transaction
//     only for a group its own client consumes in (GroupTransactSession), while the harness's
//     copier consumes in one worker and produces in another, as Java's does; this worker sends
//     AddOffsetsToTxn and TxnOffsetCommit itself with the producer id and epoch franz-go holds
//     (ProducerID) and the consumer's generation and member id (KIP-447's fencing);
//
//   - whether an abort proves anything: after a commit whose outcome franz-go could not confirm,
//     its abort reloads the producer id instead of sending EndTxn, and that reload completes a
//     commit the coordinator had prepared; so such an abort is answered as an error (outcome
//     unknown), never ok.
//
// KIP-848's consumer protocol runs through ServerSideBalancer, which franz-go has from 1.22 (built
// with the tag highwater_server_side_balancer; nextgen_*.go). Not here yet: TLS/SASL (refused in
// one line).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"highwater/protocol"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// settings are the neutral settings (protocol.Settings), mapped to franz-go's options below.
type settings struct{ protocol.Settings }

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func (s *settings) common() ([]kgo.Opt, error) {
	if p := s.Security.Protocol; p != "" && p != "PLAINTEXT" {
		return nil, fmt.Errorf("the franz-go worker speaks PLAINTEXT only, not %s", p)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.Bootstrap...),
		kgo.ClientID(s.ClientID),
		// the library's own account of the run, in the worker's log (stderr)
		kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)),
	}
	if s.MetadataMaxAgeMs > 0 {
		opts = append(opts, kgo.MetadataMaxAge(ms(s.MetadataMaxAgeMs)))
	}
	return opts, nil
}

func (s *settings) producerOpts() ([]kgo.Opt, error) {
	opts, err := s.common()
	if err != nil {
		return nil, err
	}
	if s.TransactionalID != nil {
		opts = append(opts, kgo.TransactionalID(*s.TransactionalID))
		if s.TransactionTimeoutMs > 0 {
			opts = append(opts, kgo.TransactionTimeout(ms(s.TransactionTimeoutMs)))
		}
	}
	acks := s.AcksText()
	switch acks {
	case "all", "-1", "":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	default:
		return nil, fmt.Errorf("unknown acks %s", acks)
	}
	if !s.Idempotence && s.TransactionalID == nil { // a transactional producer is idempotent
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	opts = append(opts,
		// uncompressed, as every other client's worker writes (franz-go's default is snappy,
		// which a reader without a snappy codec cannot read back)
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(s.Retries),
		kgo.ProducerLinger(ms(s.LingerMs)),
	)
	if s.RequestTimeoutMs > 0 {
		opts = append(opts, kgo.ProduceRequestTimeout(ms(s.RequestTimeoutMs)))
	}
	if s.DeliveryTimeoutMs > 0 {
		opts = append(opts, kgo.RecordDeliveryTimeout(ms(s.DeliveryTimeoutMs)))
	}
	if s.MaxInFlight > 0 && !s.Idempotence {
		opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(s.MaxInFlight))
	}
	return opts, nil
}

// version is the franz-go version this worker was built against.
func version() string { return protocol.ModuleVersion("github.com/twmb/franz-go") }

// --- producer ------------------------------------------------------------------------------

type producer struct {
	cl  *kgo.Client
	out *protocol.Out
	txn string // the transactional id ("": none)
	// the error of the last commit, until the next begin: an abort after a commit franz-go
	// could not confirm proves nothing (package comment)
	commitErr error
}

func (p *producer) Send(id int64, topic string, partition int32, value string) {
	r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}
	p.cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
		p.out.Outcome(id, r.Offset, err)
	})
}

func (p *producer) Handle(c *protocol.Command) (map[string]any, error) {
	switch c.Op {
	case "flush":
		ctx, cancel := context.WithTimeout(context.Background(), ms(c.TimeoutMs))
		defer cancel()
		return map[string]any{}, p.cl.Flush(ctx)
	case "close":
		ctx, cancel := context.WithTimeout(context.Background(), ms(c.TimeoutMs))
		defer cancel()
		err := p.cl.Flush(ctx)
		p.cl.Close()
		return map[string]any{}, err
	case "init_transactions", "begin_transaction", "commit_transaction", "abort_transaction", "send_offsets":
		if p.txn == "" {
			return nil, fmt.Errorf("IllegalStateError: %s on a producer without a transactional id", c.Op)
		}
		ctx, cancel := context.WithTimeout(context.Background(), ms(c.TimeoutMs))
		defer cancel()
		return map[string]any{}, p.transaction(ctx, c)
	}
	return nil, fmt.Errorf("unknown producer op %s", c.Op)
}

// transaction runs one of the transactional commands (docs/adding-a-client.md).
func (p *producer) transaction(ctx context.Context, c *protocol.Command) error {
	switch c.Op {
	case "init_transactions":
		// InitProducerID at once, fencing an older producer of the same id (franz-go would
		// otherwise ask for it at the first produce)
		_, _, err := p.cl.ProducerID(ctx)
		return err
	case "begin_transaction":
		p.commitErr = nil
		return p.cl.BeginTransaction()
	case "commit_transaction":
		if err := p.cl.Flush(ctx); err != nil {
			p.commitErr = kerr.OperationNotAttempted // nothing was sent to the coordinator
			return err
		}
		p.commitErr = p.cl.EndTransaction(ctx, kgo.TryCommit)
		return p.commitErr
	case "abort_transaction":
		if err := p.cl.AbortBufferedRecords(ctx); err != nil {
			return err
		}
		if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
			return err
		}
		if prior := p.commitErr; prior != nil && !errors.Is(prior, kerr.OperationNotAttempted) && !errors.Is(prior, kerr.TransactionAbortable) {
			return fmt.Errorf("UnknownOutcome: the abort after a commit that failed (%v) proves nothing: franz-go reloads the producer id, which completes a prepared commit", prior)
		}
		return nil
	case "send_offsets":
		return p.sendOffsets(ctx, c.Offsets, c.Group)
	}
	return fmt.Errorf("unknown transactional op %s", c.Op)
}

// sendOffsets adds a consumer's offsets to the open transaction (package comment): the
// transaction coordinator learns the group (AddOffsetsToTxn), then the group coordinator holds
// the offsets until the transaction ends (TxnOffsetCommit, by topic name and id).
func (p *producer) sendOffsets(ctx context.Context, offsets []protocol.PartitionOffset, g *protocol.GroupMetadata) error {
	if g == nil || g.GroupID == "" {
		return errors.New("IllegalArgument: send_offsets needs the consumer's group metadata")
	}
	id, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = p.txn, id, epoch, g.GroupID
	added, err := add.RequestWith(ctx, p.cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(added.ErrorCode); err != nil {
		return fmt.Errorf("AddOffsetsToTxn: %w", err)
	}
	byTopic := map[string]map[int32]kgo.EpochOffset{}
	for _, o := range offsets {
		if byTopic[o.Topic] == nil {
			byTopic[o.Topic] = map[int32]kgo.EpochOffset{}
		}
		byTopic[o.Topic][o.Partition] = kgo.EpochOffset{Epoch: -1, Offset: o.Offset}
	}
	ids, err := topicIDs(ctx, p.cl, byTopic)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = p.txn, g.GroupID, id, epoch
	req.Generation, req.MemberID, req.InstanceID = g.GenerationID, g.MemberID, g.GroupInstanceID
	for topic, parts := range byTopic {
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic, t.TopicID = topic, ids[topic]
		for partition, eo := range parts {
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = partition, eo.Offset, -1
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, p.cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("TxnOffsetCommit %s-%d: %w", t.Topic, rp.Partition, err)
			}
		}
	}
	return nil
}

// --- consumer ------------------------------------------------------------------------------

// servedBy tags each buffered record with the broker that served its batch (package comment).
type servedBy struct {
	mu     sync.Mutex
	last   map[protocol.TopicPartition]int32
	record map[*kgo.Record]int32
}

func (h *servedBy) OnFetchBatchRead(meta kgo.BrokerMetadata, topic string, partition int32, _ kgo.FetchBatchMetrics) {
	h.mu.Lock()
	h.last[protocol.TopicPartition{Topic: topic, Partition: partition}] = meta.NodeID
	h.mu.Unlock()
}

func (h *servedBy) OnFetchRecordBuffered(r *kgo.Record) {
	h.mu.Lock()
	if node, ok := h.last[protocol.TopicPartition{Topic: r.Topic, Partition: r.Partition}]; ok {
		h.record[r] = node
	}
	h.mu.Unlock()
}

// OnFetchRecordUnbuffered forgets a record dropped without being polled (a polled one is
// unbuffered inside PollRecords, before the worker asks who served it: take forgets it).
func (h *servedBy) OnFetchRecordUnbuffered(r *kgo.Record, polled bool) {
	if polled {
		return
	}
	h.mu.Lock()
	delete(h.record, r)
	h.mu.Unlock()
}

// take is the broker that served r (-1: unknown), forgotten once asked.
func (h *servedBy) take(r *kgo.Record) int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	node, ok := h.record[r]
	if !ok {
		return -1
	}
	delete(h.record, r)
	return node
}

type consumer struct {
	s         settings
	out       *protocol.Out
	cl        *kgo.Client
	served    *servedBy
	mode      string
	positions map[protocol.TopicPartition]int64
	mu        sync.Mutex // positions, written by poll and by the group's callbacks
	// pending: partitions assigned but not yet handed to franz-go. Up to 1.22.2 a SetOffsets on
	// a partition whose first offset load is still in flight is dropped (PR #1524 made it work in
	// 1.22.3), and the harness seeks right after it assigns, so a partition goes to
	// AddConsumePartitions with its seek's offset, or from the start at the first poll.
	pending map[protocol.TopicPartition]bool
}

func (c *consumer) Send(int64, string, int32, string) {}

func (c *consumer) opts() ([]kgo.Opt, error) {
	opts, err := c.s.common()
	if err != nil {
		return nil, err
	}
	reset := kgo.NewOffset().AtStart()
	if c.s.AutoOffsetReset == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	opts = append(opts, kgo.ConsumeResetOffset(reset), kgo.WithHooks(c.served))
	if c.s.ClientRack != nil {
		opts = append(opts, kgo.Rack(*c.s.ClientRack))
	}
	if c.s.PreferredReplicaRecheckMs != nil { // 30 minutes by default
		opts = append(opts, kgo.RecheckPreferredReplicaInterval(ms(*c.s.PreferredReplicaRecheckMs)))
	}
	if c.s.FetchMaxWaitMs > 0 {
		opts = append(opts, kgo.FetchMaxWait(ms(c.s.FetchMaxWaitMs)))
	}
	if c.s.IsolationLevel == "read_committed" {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if _, err := c.protocolOpts(); err != nil { // refused at the start, not at subscribe
		return nil, err
	}
	return opts, nil
}

// protocolOpts are the group options of the group protocol asked for (a subscriber's only).
func (c *consumer) protocolOpts() ([]kgo.Opt, error) {
	switch c.s.GroupProtocol {
	case "", "classic":
		return nil, nil
	case "consumer":
		assignor := ""
		if c.s.GroupRemoteAssignor != nil {
			assignor = *c.s.GroupRemoteAssignor
		}
		return consumerProtocol(assignor)
	}
	return nil, fmt.Errorf("unknown group protocol %s", c.s.GroupProtocol)
}

func (c *consumer) revoked(reason string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, gone map[string][]int32) {
		for topic, parts := range gone {
			for _, p := range parts {
				c.out.Line(map[string]any{"event": "revoke", "topic": topic, "partition": p, "reason": reason})
			}
		}
	}
}

func (c *consumer) assigned(_ context.Context, _ *kgo.Client, got map[string][]int32) {
	for topic, parts := range got {
		for _, p := range parts {
			c.out.Line(map[string]any{"event": "position", "topic": topic, "partition": p, "offset": nil, "reason": "rebalance"})
		}
	}
}

func (c *consumer) start(extra ...kgo.Opt) error {
	opts, err := c.opts()
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return err
	}
	c.cl = cl
	return nil
}

func (c *consumer) Handle(cmd *protocol.Command) (map[string]any, error) {
	ok := map[string]any{}
	switch cmd.Op {
	case "assign":
		tps, _, err := cmd.PartitionList()
		if err != nil {
			return nil, err
		}
		if c.cl == nil {
			if err := c.start(); err != nil {
				return nil, err
			}
		}
		c.mode = "assign"
		if c.pending == nil {
			c.pending = map[protocol.TopicPartition]bool{}
		}
		for _, tp := range tps {
			c.pending[tp] = true
		}
		return ok, nil
	case "subscribe":
		if c.s.GroupID == nil {
			return nil, errors.New("subscribe needs a group id")
		}
		extra := []kgo.Opt{
			kgo.ConsumerGroup(*c.s.GroupID), kgo.ConsumeTopics(cmd.Topics...), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(c.assigned),
			kgo.OnPartitionsRevoked(c.revoked("revoked")), kgo.OnPartitionsLost(c.revoked("lost")),
		}
		if c.s.SessionTimeoutMs != nil {
			extra = append(extra, kgo.SessionTimeout(ms(*c.s.SessionTimeoutMs)))
		}
		protocol, err := c.protocolOpts()
		if err != nil {
			return nil, err
		}
		extra = append(extra, protocol...)
		if c.cl != nil {
			c.cl.Close()
		}
		c.mode = "subscribe"
		return ok, c.start(extra...)
	case "seek":
		c.setOffset(cmd.Topic, cmd.Partition, cmd.Offset)
		return ok, nil
	case "seek_to_beginning":
		low, err := c.logStart(cmd.Topic, cmd.Partition)
		if err != nil {
			return nil, err
		}
		c.setOffset(cmd.Topic, cmd.Partition, low)
		c.out.Line(map[string]any{"event": "position", "topic": cmd.Topic, "partition": cmd.Partition, "offset": low, "reason": "reset"})
		return ok, nil
	case "poll":
		return c.poll(cmd.TimeoutMs)
	case "commit":
		return ok, c.commit(cmd.Offsets)
	case "group_metadata":
		member, generation := "", int32(-1)
		if c.mode == "subscribe" && c.cl != nil {
			member, generation = c.cl.GroupMetadata()
		}
		group := ""
		if c.s.GroupID != nil {
			group = *c.s.GroupID
		}
		return map[string]any{"group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": nil}, nil
	case "close":
		if c.cl != nil {
			if c.mode == "subscribe" {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				c.cl.LeaveGroupContext(ctx)
				cancel()
			}
			c.cl.Close()
		}
		return ok, nil
	}
	return nil, fmt.Errorf("unknown consumer op %s", cmd.Op)
}

// addPending hands the partitions still pending to franz-go, from their start (no seek came).
func (c *consumer) addPending() {
	if len(c.pending) == 0 {
		return
	}
	add := map[string]map[int32]kgo.Offset{}
	for tp := range c.pending {
		if add[tp.Topic] == nil {
			add[tp.Topic] = map[int32]kgo.Offset{}
		}
		add[tp.Topic][tp.Partition] = kgo.NewOffset().AtStart()
	}
	c.pending = map[protocol.TopicPartition]bool{}
	c.cl.AddConsumePartitions(add)
}

func (c *consumer) setOffset(topic string, partition int32, offset int64) {
	tp := protocol.TopicPartition{Topic: topic, Partition: partition}
	if c.pending[tp] {
		delete(c.pending, tp)
		c.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().At(offset)}})
	} else {
		c.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {partition: {Epoch: -1, Offset: offset}}})
	}
	c.mu.Lock()
	c.positions[tp] = offset
	c.mu.Unlock()
}

// logStart asks the partition's leader for its log start offset (ListOffsets, timestamp -2).
func (c *consumer) logStart(topic string, partition int32) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition = partition
	p.CurrentLeaderEpoch = -1
	p.Timestamp = -2
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return 0, err
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == partition {
				if rp.ErrorCode != 0 {
					return 0, fmt.Errorf("ListOffsets %s-%d: %w", topic, partition, kerr.ErrorForCode(rp.ErrorCode))
				}
				return rp.Offset, nil
			}
		}
	}
	return 0, fmt.Errorf("ListOffsets answered nothing for %s-%d", topic, partition)
}

func (c *consumer) poll(timeoutMs int64) (map[string]any, error) {
	if c.cl == nil {
		return nil, errors.New("poll before assign or subscribe")
	}
	c.addPending()
	fetches, err := pollRecords(c.cl, timeoutMs, c.s.MaxPollRecords, func(topic string, partition int32, err error) {
		var loss *kgo.ErrDataLoss
		if !errors.As(err, &loss) {
			protocol.Logf("fetch error on %s-%d: %v", topic, partition, err)
			return
		}
		c.mu.Lock()
		c.positions[protocol.TopicPartition{Topic: loss.Topic, Partition: loss.Partition}] = loss.ResetTo
		c.mu.Unlock()
		c.out.Line(map[string]any{"event": "position", "topic": loss.Topic, "partition": loss.Partition, "offset": loss.ResetTo, "reason": c.lossReason(loss)})
	})
	if err != nil {
		return nil, err
	}
	var parts protocol.Parts
	fetches.EachRecord(func(r *kgo.Record) {
		parts.Add(r.Topic, r.Partition, c.served.take(r), r.Offset, r.LeaderEpoch, string(r.Value))
		c.mu.Lock()
		c.positions[protocol.TopicPartition{Topic: r.Topic, Partition: r.Partition}] = r.Offset + 1
		c.mu.Unlock()
	})
	return map[string]any{"parts": parts.List()}, nil
}

// pollRecords is one PollRecords of at most maxPoll records (500 when unset) within timeoutMs,
// for the consumer and the share consumer; each error but the poll's own deadline goes to
// onError.
func pollRecords(cl *kgo.Client, timeoutMs int64, maxPoll int, onError func(topic string, partition int32, err error)) (kgo.Fetches, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ms(timeoutMs))
	defer cancel()
	if maxPoll <= 0 {
		maxPoll = 500
	}
	fetches := cl.PollRecords(ctx, maxPoll)
	if fetches.IsClientClosed() {
		return nil, errors.New("ClientClosed: the consumer is closed")
	}
	fetches.EachError(func(topic string, partition int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			onError(topic, partition, err)
		}
	})
	return fetches, nil
}

// lossReason says how franz-go moved a position it reported as lost data: "truncation" when it
// moved to the divergence point KIP-320 finds (franz-go asked OffsetForLeaderEpoch for the epoch
// it had consumed and moved to the end offset answered), "reset" when it fell back to its reset
// offset (an out-of-range fetch, or no epoch to ask about). ErrDataLoss does not say which, so
// the worker asks the leader the same question and compares: the end offset of the consumed
// epoch is the divergence point, and a position moved there is KIP-320's (an answer that cannot
// be had, or a position elsewhere, is a reset: the worker never claims a detection unproven).
func (c *consumer) lossReason(loss *kgo.ErrDataLoss) string {
	if loss.ConsumedToEpoch < 0 {
		return "reset"
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = loss.Topic
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = loss.Partition, -1, loss.ConsumedToEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		protocol.Logf("data loss on %s-%d: cannot ask for the divergence point (%v): reported as a reset", loss.Topic, loss.Partition, err)
		return "reset"
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition != loss.Partition || rp.ErrorCode != 0 || rp.EndOffset < 0 {
				continue
			}
			if divergence := min(rp.EndOffset, loss.ConsumedTo); divergence == loss.ResetTo {
				return "truncation"
			}
			protocol.Logf("data loss on %s-%d: moved to %d, the divergence point is %d: a reset", loss.Topic, loss.Partition, loss.ResetTo, min(rp.EndOffset, loss.ConsumedTo))
			return "reset"
		}
	}
	return "reset"
}

func (c *consumer) commit(asked []protocol.PartitionOffset) error {
	offsets := map[string]map[int32]kgo.EpochOffset{}
	add := func(topic string, partition int32, offset int64) {
		if offsets[topic] == nil {
			offsets[topic] = map[int32]kgo.EpochOffset{}
		}
		offsets[topic][partition] = kgo.EpochOffset{Epoch: -1, Offset: offset}
	}
	if asked != nil {
		for _, o := range asked {
			add(o.Topic, o.Partition, o.Offset)
		}
	} else {
		c.mu.Lock()
		for tp, off := range c.positions {
			add(tp.Topic, tp.Partition, off)
		}
		c.mu.Unlock()
	}
	if len(offsets) == 0 {
		return nil
	}
	if c.s.GroupID == nil {
		return errors.New("commit needs a group id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if c.mode == "subscribe" {
		var failed error
		c.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			failed = firstCommitError(resp, err)
		})
		return failed
	}
	// assign mode: a commit outside any generation, as an admin would make it (by name and by
	// topic id: OffsetCommit v10, Kafka 4.1's, names topics by id only)
	ids, err := topicIDs(ctx, c.cl, offsets)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = *c.s.GroupID
	req.Generation = -1
	for topic, parts := range offsets {
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = topic
		t.TopicID = ids[topic]
		for p, eo := range parts {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition = p
			rp.Offset = eo.Offset
			rp.LeaderEpoch = -1
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, c.cl)
	return firstCommitError(resp, err)
}

// topicIDs asks the cluster for the ids of the topics of offsets.
func topicIDs(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset) (map[string][16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	for topic := range offsets {
		t := kmsg.NewMetadataRequestTopic()
		name := topic
		t.Topic = &name
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	ids := map[string][16]byte{}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			ids[*t.Topic] = t.TopicID
		}
	}
	return ids, nil
}

func firstCommitError(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	if resp == nil {
		return nil
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				return fmt.Errorf("OffsetCommit %s-%d: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return nil
}

// --- the process ---------------------------------------------------------------------------

// main runs the worker protocol's command loop (protocol.Serve) with this worker's roles.
func main() { protocol.Serve(version(), start) }

func start(cmd *protocol.Command, o *protocol.Out) (protocol.Role, error) {
	var s settings
	if err := protocol.ReadSettings(cmd, "franz-go", &s); err != nil {
		return nil, err
	}
	switch cmd.Role {
	case "producer":
		opts, err := s.producerOpts()
		if err != nil {
			return nil, err
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, err
		}
		p := &producer{cl: cl, out: o}
		if s.TransactionalID != nil {
			p.txn = *s.TransactionalID
		}
		return p, nil
	case "consumer":
		c := &consumer{s: s, out: o, positions: map[protocol.TopicPartition]int64{},
			served: &servedBy{last: map[protocol.TopicPartition]int32{}, record: map[*kgo.Record]int32{}}}
		if _, err := c.opts(); err != nil {
			return nil, err
		}
		return c, nil
	case "share_consumer":
		return newShareConsumer(s, o)
	}
	return nil, fmt.Errorf("the franz-go worker has no role %s", cmd.Role)
}
