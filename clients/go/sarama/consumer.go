package main

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"highwater/protocol"

	"github.com/IBM/sarama"
)

// consumer is Sarama's Consumer (assign mode: a PartitionConsumer per partition) or its
// ConsumerGroup (subscribe mode). Either way the records go from Sarama's channels, through
// goroutines, into one channel that poll reads: Sarama has no poll.
type consumer struct {
	s       settings
	conf    *sarama.Config
	out     *protocol.Out
	served  *servedBy
	max     int         // max_poll_records
	records chan record // every partition's records, in the order Sarama handed them over
	wake    chan struct{}
	held    *record // a position event poll met after it had records: written at the next poll
	mode    string  // "assign" or "subscribe" once one was asked
	client  sarama.Client
	closed  bool

	// held by poll from collecting its records to its reply (Replied), and by a group session's
	// Setup and Cleanup while they write their events: a revocation falls after the records
	// polled before it, never between them and their reply
	stream     sync.Mutex
	streamHeld bool

	mu        sync.Mutex                        // positions, and the assigned partitions (parts) and their runs
	positions map[protocol.TopicPartition]int64 // the offset after the last record returned, or of the last seek or reset

	// assign mode
	sc    sarama.Consumer
	parts map[protocol.TopicPartition]*assigned

	// subscribe mode
	g groupState
}

// record is a record and where it came from, or a position event to write in its place (at:
// the position it sets).
type record struct {
	msg   *sarama.ConsumerMessage
	src   *source
	event map[string]any
	at    protocol.PartitionOffset
}

// source is where records come from: one run of a partition consumer (assign mode), or one group
// session (subscribe mode); dropped once its records are no longer wanted (a seek, a session's
// end), and poll drops the ones it still meets.
type source struct {
	gone chan struct{}
	once sync.Once
}

func newSource() *source { return &source{gone: make(chan struct{})} }

func (s *source) drop() { s.once.Do(func() { close(s.gone) }) }

func (s *source) dropped() bool {
	select {
	case <-s.gone:
		return true
	default:
		return false
	}
}

func newConsumer(s settings, conf *sarama.Config, served *servedBy, o *protocol.Out) *consumer {
	max := s.MaxPollRecords
	if max <= 0 {
		max = 500
	}
	return &consumer{
		s: s, conf: conf, out: o, served: served, max: max,
		records:   make(chan record, 2*max),
		wake:      make(chan struct{}, 1),
		positions: map[protocol.TopicPartition]int64{},
		parts:     map[protocol.TopicPartition]*assigned{},
		g:         groupState{generation: -1},
	}
}

func (c *consumer) Send(int64, string, int32, string) {}

// poke wakes a poll that waits for records: a partition consumer started or stopped.
func (c *consumer) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *consumer) startClient() error {
	if c.client != nil {
		return nil
	}
	client, err := sarama.NewClient(c.s.Bootstrap, c.conf)
	if err != nil {
		return err
	}
	c.client = client
	return nil
}

func (c *consumer) Handle(cmd *protocol.Command) (map[string]any, error) {
	ok := map[string]any{}
	if cmd.Op == "poll" {
		// released once the reply is written (Replied)
		c.stream.Lock()
		c.streamHeld = true
		return c.poll(cmd.TimeoutMs)
	}
	if c.closed && cmd.Op != "close" {
		return nil, protocol.Errorf("IllegalStateError", "%s on a closed consumer", cmd.Op)
	}
	switch cmd.Op {
	case "assign":
		tps, _, err := cmd.PartitionList()
		if err != nil {
			return nil, err
		}
		return ok, c.assign(tps)
	case "subscribe":
		return ok, c.subscribe(cmd.Topics)
	case "seek":
		return ok, c.seek(protocol.TopicPartition{Topic: cmd.Topic, Partition: cmd.Partition}, cmd.Offset)
	case "seek_to_beginning":
		tp := protocol.TopicPartition{Topic: cmd.Topic, Partition: cmd.Partition}
		if c.client == nil {
			return nil, protocol.Errorf("IllegalStateError", "seek_to_beginning before assign or subscribe")
		}
		var low int64
		err := within(15*time.Second, "asking for the log start", func() (err error) {
			low, err = c.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetOldest)
			return err
		})
		if err != nil {
			return nil, err
		}
		if err := c.seek(tp, low); err != nil {
			return nil, err
		}
		c.out.Line(map[string]any{"event": "position", "topic": tp.Topic, "partition": tp.Partition, "offset": low, "reason": "reset"})
		return ok, nil
	case "commit":
		return ok, c.commit(cmd.Offsets)
	case "group_metadata":
		group := ""
		if c.s.GroupID != nil {
			group = *c.s.GroupID
		}
		c.g.mu.Lock()
		generation, member := c.g.generation, c.g.member
		c.g.mu.Unlock()
		if c.mode != "subscribe" {
			generation, member = -1, ""
		}
		return map[string]any{"group_id": group, "generation_id": generation, "member_id": member, "group_instance_id": nil}, nil
	case "close":
		c.close()
		return ok, nil
	}
	return nil, fmt.Errorf("unknown consumer op %s", cmd.Op)
}

// Replied ends a poll: the records it returned are in its reply (protocol.Replied).
func (c *consumer) Replied(*protocol.Command) {
	if c.streamHeld {
		c.streamHeld = false
		c.stream.Unlock()
	}
}

// within runs call, answered by the timeout (Sarama's requests take no deadline: a broker that
// does not answer holds one up to Net.ReadTimeout); at the timeout the call goes on unwatched.
func within(timeout time.Duration, what string, call func() error) error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return protocol.Errorf("TimeoutException", "%s took longer than %s", what, timeout)
	}
}

func (c *consumer) seek(tp protocol.TopicPartition, offset int64) error {
	switch c.mode {
	case "assign":
		if err := c.seekAssigned(tp, offset); err != nil {
			return err
		}
	case "subscribe":
		if err := c.seekClaimed(tp, offset); err != nil {
			return err
		}
	default:
		return protocol.Errorf("IllegalStateError", "seek before assign or subscribe")
	}
	c.mu.Lock()
	c.positions[tp] = offset
	c.mu.Unlock()
	return nil
}

// --- poll ----------------------------------------------------------------------------------

// poll returns up to max_poll_records records available by the timeout: as soon as it has some
// and no more are there at once. Called with c.stream held (Handle), which it leaves only while
// it waits for records.
func (c *consumer) poll(timeoutMs int64) (map[string]any, error) {
	if c.closed {
		return nil, protocol.Errorf("ClientClosed", "the consumer is closed")
	}
	if c.mode == "" {
		return nil, protocol.Errorf("IllegalStateError", "poll before assign or subscribe")
	}
	timer := time.NewTimer(ms(timeoutMs))
	defer timer.Stop()
	var got []*sarama.ConsumerMessage
	if c.held != nil {
		held := c.held
		c.held = nil
		if !held.src.dropped() {
			c.event(held)
		}
	}
wait:
	for {
		var due <-chan time.Time // a partition's start to try again
		if c.mode == "assign" {
			if next := c.startRuns(time.Now()); !next.IsZero() {
				retry := time.NewTimer(time.Until(next))
				defer retry.Stop()
				due = retry.C
			}
		}
		if c.collect(&got) || len(got) > 0 {
			break
		}
		c.stream.Unlock()
		select {
		case r := <-c.records:
			c.stream.Lock()
			if c.take(r, &got) {
				break wait
			}
		case <-c.wake:
			c.stream.Lock()
		case <-due:
			c.stream.Lock()
		case <-timer.C:
			c.stream.Lock()
			break wait
		}
	}
	return map[string]any{"parts": c.reply(got)}, nil
}

// collect takes what is in the channel now, until max; true when poll must stop here.
func (c *consumer) collect(got *[]*sarama.ConsumerMessage) bool {
	for len(*got) < c.max {
		select {
		case r := <-c.records:
			if c.take(r, got) {
				return true
			}
		default:
			return false
		}
	}
	return true
}

// take adds r to got, drops it if its source is gone, or writes its event: at once when got is
// empty, else at the next poll, so that it falls between the records before and after it;
// true when poll must stop here (an event held).
func (c *consumer) take(r record, got *[]*sarama.ConsumerMessage) bool {
	if r.src.dropped() {
		if r.msg != nil {
			c.served.forget(r.msg)
		}
		return false
	}
	if r.msg == nil {
		if len(*got) > 0 {
			c.held = &r
			return true
		}
		c.event(&r)
		return false
	}
	*got = append(*got, r.msg)
	return false
}

// event writes a position event of the records' stream, and moves the position.
func (c *consumer) event(r *record) {
	c.out.Line(r.event)
	c.mu.Lock()
	c.positions[protocol.TopicPartition{Topic: r.at.Topic, Partition: r.at.Partition}] = r.at.Offset
	c.mu.Unlock()
}

// reply is a poll's parts: one entry per partition and serving broker, offsets as runs, and
// epochs as runs of null (Sarama's ConsumerMessage carries no leader epoch).
func (c *consumer) reply(got []*sarama.ConsumerMessage) []*protocol.Part {
	var parts protocol.Parts
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range got {
		parts.Add(m.Topic, m.Partition, c.served.take(m), m.Offset, -1, string(m.Value))
		c.positions[protocol.TopicPartition{Topic: m.Topic, Partition: m.Partition}] = m.Offset + 1
	}
	return parts.List()
}

// --- commit --------------------------------------------------------------------------------

// commitVersion is the OffsetCommit version the worker sends: 7 (Kafka 2.3), which every Kafka
// 3.x and 4.x broker takes (4.0 dropped v0 and v1) and every Sarama this worker builds against
// encodes.
const commitVersion = 7

// commit commits offsets (none: the consumed positions) and answers how it went. Sarama's own
// commits (ConsumerGroupSession.Commit, OffsetManager.Commit) answer nothing: a failure reaches
// only the Errors channel, a commit whose answer never came nothing at all, while the protocol's
// commit is synchronous and must fail when the commit failed or its outcome is unknown. So the
// worker sends the OffsetCommit to the group's coordinator itself, with the current session's
// generation and member id in subscribe mode (the coordinator refuses a member's commit from an
// older generation, as it refuses Java's), outside any generation in assign mode (-1, no member,
// as an admin commits), and answers the first error.
func (c *consumer) commit(asked []protocol.PartitionOffset) error {
	offsets := map[protocol.TopicPartition]int64{}
	if asked != nil {
		for _, o := range asked {
			offsets[protocol.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
		}
	} else {
		c.mu.Lock()
		for tp, off := range c.positions {
			offsets[tp] = off
		}
		c.mu.Unlock()
	}
	if len(offsets) == 0 {
		return nil
	}
	if c.s.GroupID == nil {
		return protocol.Errorf("IllegalStateError", "commit needs a group id")
	}
	if c.client == nil {
		return protocol.Errorf("IllegalStateError", "commit before assign or subscribe")
	}
	group := *c.s.GroupID
	generation, member := int32(-1), ""
	if c.mode == "subscribe" {
		c.g.mu.Lock()
		generation, member = c.g.generation, c.g.member
		c.g.mu.Unlock()
	}
	req := &sarama.OffsetCommitRequest{
		Version:                 commitVersion,
		ConsumerGroup:           group,
		ConsumerGroupGeneration: generation,
		ConsumerID:              member,
	}
	for tp, off := range offsets {
		req.AddBlockWithLeaderEpoch(tp.Topic, tp.Partition, off, -1, 0, "")
	}
	return within(15*time.Second, "the commit", func() error {
		coordinator, err := c.client.Coordinator(group)
		if err != nil {
			return err
		}
		resp, err := coordinator.CommitOffset(req)
		if err != nil {
			// as Sarama's offset manager does: a connection that failed is closed (the next
			// request opens it again), and the coordinator looked up again
			_ = coordinator.Close()
			_ = c.client.RefreshCoordinator(group)
			return err
		}
		for tp := range offsets {
			kerr, ok := resp.Errors[tp.Topic][tp.Partition]
			if !ok {
				return fmt.Errorf("OffsetCommit answered nothing for %s-%d", tp.Topic, tp.Partition)
			}
			if errors.Is(kerr, sarama.ErrNoError) {
				continue
			}
			if errors.Is(kerr, sarama.ErrNotCoordinatorForConsumer) || errors.Is(kerr, sarama.ErrConsumerCoordinatorNotAvailable) {
				_ = c.client.RefreshCoordinator(group)
			}
			return fmt.Errorf("OffsetCommit %s-%d: %w", tp.Topic, tp.Partition, kerr)
		}
		return nil
	})
}

// --- close ---------------------------------------------------------------------------------

// close leaves the group (subscribe mode) or closes the partition consumers (assign mode), then
// the client, waiting up to 15 s for each.
func (c *consumer) close() {
	if c.closed {
		return
	}
	c.closed = true
	switch c.mode {
	case "subscribe":
		c.closeGroup()
	case "assign":
		c.closeAssigned()
	}
	if c.client != nil {
		if err := c.client.Close(); err != nil {
			protocol.Logf("closing the client: %v", err)
		}
	}
}

// sortedClaims is a session's partitions, in order.
func sortedClaims(claims map[string][]int32) []protocol.TopicPartition {
	var tps []protocol.TopicPartition
	for topic, parts := range claims {
		for _, p := range parts {
			tps = append(tps, protocol.TopicPartition{Topic: topic, Partition: p})
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps
}

func positionEvent(tp protocol.TopicPartition, offset any, reason string) map[string]any {
	return map[string]any{"event": "position", "topic": tp.Topic, "partition": tp.Partition, "offset": offset, "reason": reason}
}

// waitClosed waits for done until the deadline; false at the deadline.
func waitClosed(done <-chan struct{}, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}
