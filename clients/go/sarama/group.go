package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"highwater/protocol"

	"github.com/IBM/sarama"
)

// groupState is subscribe mode's: Sarama's ConsumerGroup, whose Consume runs one session (a
// generation's partitions, the claims) through the handler and returns when it ends; the worker
// calls it again in a goroutine until close.
//
// A seek: Sarama cannot move a claimed partition (a claim's partition consumer starts at the
// offset its partition offset manager holds, pom.NextOffset(), and is never moved). So the
// worker notes the offset, ends the session (the context Consume runs under) and calls Consume
// again, which rejoins with the member id; the next session's Setup, which runs after Sarama has
// made the partition offset managers and before it starts the claims, moves each partition
// sought that the session claims there (moveClaim). With auto-commit off that commits nothing:
// the offset manager flushes on its Close only with auto-commit on (offset_manager.go's Close),
// and the worker never calls Commit on it. A partition sought that the next session does not
// claim went to another member: the seek is dropped (that member starts from the committed
// offset). The records of the ended session still in the poll channel are dropped (its source).
type groupState struct {
	mu         sync.Mutex
	group      sarama.ConsumerGroup
	topics     []string
	cancel     context.CancelFunc                // ends the current Consume
	session    bool                              // a session is between its Setup and its Cleanup
	src        *source                           // the current session's records
	owned      map[protocol.TopicPartition]bool  // what a seek may move: the current session's partitions
	rejoin     bool                              // the current session was ended for a seek: its partitions stay ours until the next
	seeks      map[protocol.TopicPartition]int64 // for the next session's Setup
	applied    map[protocol.TopicPartition]int64 // applied in the current session, its claim not started yet
	generation int32
	member     string
	closing    bool
	closed     chan struct{}
	loopDone   chan struct{}
}

func (c *consumer) subscribe(topics []string) error {
	if c.mode == "assign" {
		return protocol.Errorf("IllegalStateError", "subscribe after assign")
	}
	if c.s.GroupID == nil {
		return protocol.Errorf("IllegalStateError", "subscribe needs a group id")
	}
	if err := c.startClient(); err != nil {
		return err
	}
	c.mode = "subscribe"
	c.g.mu.Lock()
	c.g.topics = append([]string(nil), topics...)
	if c.g.group != nil {
		// another subscription: from the next session on
		cancel := c.g.cancel
		if c.g.session {
			c.g.src.drop()
		}
		c.g.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return nil
	}
	c.g.mu.Unlock()
	group, err := sarama.NewConsumerGroupFromClient(*c.s.GroupID, c.client)
	if err != nil {
		return err
	}
	c.g.mu.Lock()
	c.g.group = group
	c.g.seeks = map[protocol.TopicPartition]int64{}
	c.g.closed = make(chan struct{})
	c.g.loopDone = make(chan struct{})
	c.g.mu.Unlock()
	go func() {
		for err := range group.Errors() {
			protocol.Logf("group: %v", err)
		}
	}()
	go c.consumeLoop(group)
	return nil
}

// consumeLoop runs one session after another until close.
func (c *consumer) consumeLoop(group sarama.ConsumerGroup) {
	defer close(c.g.loopDone)
	handler := &groupHandler{c: c}
	for {
		c.g.mu.Lock()
		if c.g.closing {
			c.g.mu.Unlock()
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		c.g.cancel = cancel
		topics := c.g.topics
		c.g.mu.Unlock()
		began := time.Now()
		err := group.Consume(ctx, topics, handler)
		cancel()
		if errors.Is(err, sarama.ErrClosedConsumerGroup) {
			return
		}
		if err != nil && ctx.Err() == nil {
			protocol.Logf("the group session did not start: %v (again in 1 s)", err)
		}
		if err != nil || time.Since(began) < 100*time.Millisecond {
			select { // no JoinGroup storm when sessions fail at once
			case <-time.After(time.Second):
			case <-c.g.closed:
				return
			}
		}
	}
}

// seekClaimed notes a seek of a partition of the group (groupState) and ends the session.
func (c *consumer) seekClaimed(tp protocol.TopicPartition, offset int64) error {
	c.g.mu.Lock()
	if !c.g.owned[tp] {
		c.g.mu.Unlock()
		return protocol.Errorf("IllegalStateError", "No current assignment for partition %s-%d", tp.Topic, tp.Partition)
	}
	c.g.seeks[tp] = offset
	var cancel context.CancelFunc
	if c.g.session {
		c.g.src.drop()
		c.g.rejoin = true
		cancel = c.g.cancel
	} // else between sessions: the next Setup moves it
	c.g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

// moveClaim makes the claim of tp start at offset: the partition offset manager's offset, which
// MarkOffset moves forward only and ResetOffset back only (either way the two together), and
// which is -1 (none) for a partition without a committed offset.
func moveClaim(sess sarama.ConsumerGroupSession, tp protocol.TopicPartition, offset int64) {
	sess.MarkOffset(tp.Topic, tp.Partition, offset, "")
	sess.ResetOffset(tp.Topic, tp.Partition, offset, "")
}

// landing is where a claim moved to offset starts: offset when the log holds it, else where the
// reset policy says (reset), as Sarama falls back there (Consumer.Group.ResetInvalidOffsets);
// known false when the log's range could not be asked.
func (c *consumer) landing(tp protocol.TopicPartition, offset int64) (at int64, reset, known bool) {
	var oldest, newest int64
	err := within(10*time.Second, "asking for the log's range", func() (err error) {
		if oldest, err = c.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetOldest); err != nil {
			return err
		}
		newest, err = c.client.GetOffset(tp.Topic, tp.Partition, sarama.OffsetNewest)
		return err
	})
	if err != nil {
		protocol.Logf("the seek of %s-%d to %d: %v", tp.Topic, tp.Partition, offset, err)
		return offset, false, false
	}
	if offset >= oldest && offset <= newest {
		return offset, false, true
	}
	if c.conf.Consumer.Offsets.Initial == sarama.OffsetOldest {
		return oldest, true, true
	}
	return newest, true, true
}

// sessionLost says whether a session ended because the member lost its partitions (the
// coordinator no longer knew it, or fenced it) rather than gave them up: what Java calls lost.
// Sarama names the cause from 1.50 at least; 1.45 and older end every session without one,
// which is answered revoked.
func sessionLost(ctx context.Context) bool {
	cause := context.Cause(ctx)
	return errors.Is(cause, sarama.ErrUnknownMemberId) || errors.Is(cause, sarama.ErrIllegalGeneration) || errors.Is(cause, sarama.ErrFencedInstancedId)
}

// groupHandler is the worker's sarama.ConsumerGroupHandler.
type groupHandler struct{ c *consumer }

// Setup starts a session: the position events of its partitions (rebalance: where the group's
// committed offset or the reset policy puts them, not known here; a partition sought: where the
// seek put it), the seeks moved into it.
func (h *groupHandler) Setup(sess sarama.ConsumerGroupSession) error {
	c := h.c
	claimed := sortedClaims(sess.Claims())
	// where the seeks land, asked before taking the locks (a poll would wait for them)
	c.g.mu.Lock()
	asked := map[protocol.TopicPartition]int64{}
	for _, tp := range claimed {
		if offset, ok := c.g.seeks[tp]; ok {
			asked[tp] = offset
		}
	}
	c.g.mu.Unlock()
	type landed struct {
		at           int64
		reset, known bool
	}
	lands := map[protocol.TopicPartition]landed{}
	for tp, offset := range asked {
		at, reset, known := c.landing(tp, offset)
		lands[tp] = landed{at, reset, known}
	}
	c.stream.Lock()
	defer c.stream.Unlock()
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	c.g.session, c.g.src, c.g.rejoin = true, newSource(), false
	c.g.generation, c.g.member = sess.GenerationID(), sess.MemberID()
	c.g.owned = map[protocol.TopicPartition]bool{}
	c.g.applied = map[protocol.TopicPartition]int64{}
	for _, tp := range claimed {
		c.g.owned[tp] = true
		offset, sought := c.g.seeks[tp]
		if !sought {
			c.out.Line(positionEvent(tp, nil, "rebalance"))
			continue
		}
		var at any // not known: a seek noted while its range was asked, or a range not known
		land, checked := lands[tp]
		checked = checked && land.known && asked[tp] == offset
		if checked && land.reset {
			offset = land.at
		} else if checked {
			at = offset
		}
		moveClaim(sess, tp, offset)
		c.g.applied[tp] = offset
		c.mu.Lock()
		c.positions[tp] = offset
		c.mu.Unlock()
		c.out.Line(positionEvent(tp, at, "rebalance"))
		if checked && land.reset {
			c.out.Line(positionEvent(tp, land.at, "reset"))
		}
	}
	for tp := range c.g.seeks {
		if !c.g.owned[tp] {
			protocol.Logf("the seek of %s-%d is dropped: the partition went to another member", tp.Topic, tp.Partition)
		}
	}
	c.g.seeks = map[protocol.TopicPartition]int64{}
	return nil
}

// Cleanup ends a session: every partition of it revoked (lost when the coordinator had dropped
// the member), its records still in the poll channel dropped.
func (h *groupHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	c := h.c
	c.stream.Lock()
	defer c.stream.Unlock()
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.g.src != nil {
		c.g.src.drop()
	}
	c.g.session = false
	reason := "revoked"
	if sessionLost(sess.Context()) {
		reason = "lost"
		c.g.generation, c.g.member = -1, ""
	}
	claimed := sortedClaims(sess.Claims())
	for _, tp := range claimed {
		c.out.Line(map[string]any{"event": "revoke", "topic": tp.Topic, "partition": tp.Partition, "reason": reason})
	}
	// a seek moved into this session whose claim never started: again in the next
	for tp, offset := range c.g.applied {
		if _, newer := c.g.seeks[tp]; !newer {
			c.g.seeks[tp] = offset
		}
	}
	c.g.applied = nil
	if !c.g.rejoin {
		c.g.owned = nil // given up; a rejoin for a seek keeps them ours until the next Setup
	}
	c.mu.Lock()
	for _, tp := range claimed {
		if _, sought := c.g.seeks[tp]; !sought {
			delete(c.positions, tp)
		}
	}
	c.mu.Unlock()
	// every claim of the session is closed (Sarama waits for them, draining their records,
	// before Cleanup): no record of it will be tagged any more
	c.served.forgetAll()
	return nil
}

// ConsumeClaim forwards a claim's records into the poll channel until the claim closes or the
// session ends (never blocking a rebalance: Sarama waits for every ConsumeClaim to return).
// Returning when the claim closes by itself ends the session (Sarama's rule), as a fetch out of
// range does: the member rejoins, and the partition starts again from the committed offset.
func (h *groupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	c := h.c
	tp := protocol.TopicPartition{Topic: claim.Topic(), Partition: claim.Partition()}
	c.g.mu.Lock()
	src := c.g.src
	delete(c.g.applied, tp) // the claim started where its seek put it
	c.g.mu.Unlock()
	done := sess.Context().Done()
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			select {
			case c.records <- record{msg: m, src: src}:
			case <-src.gone:
				c.served.forget(m)
			case <-done:
				c.served.forget(m)
				return nil
			}
		case <-done:
			return nil
		}
	}
}

// closeGroup ends the session and leaves the group (ConsumerGroup.Close sends LeaveGroup once
// the session's Cleanup ran), waiting up to 15 s for each.
func (c *consumer) closeGroup() {
	c.g.mu.Lock()
	c.g.closing = true
	cancel, group := c.g.cancel, c.g.group
	if c.g.closed != nil {
		close(c.g.closed)
	}
	c.g.mu.Unlock()
	if group == nil {
		return
	}
	if cancel != nil {
		cancel()
	}
	if err := within(15*time.Second, "leaving the group", group.Close); err != nil {
		protocol.Logf("leaving the group: %v", err)
	}
	if !waitClosed(c.g.loopDone, time.Now().Add(15*time.Second)) {
		protocol.Logf("the group session still ending at the close's deadline")
	}
}
