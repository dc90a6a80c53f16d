package main

import (
	"errors"
	"time"

	"highwater/protocol"

	"github.com/IBM/sarama"
)

// assigned is one partition of assign mode and the runs of its PartitionConsumer. Sarama moves
// a partition consumer nowhere once it runs: a seek closes it and starts another at the offset
// (ConsumePartition), and so does a fetch out of range, which stops it (below). A run starts at
// the next poll after the assignment, the seek or the stop, and only after the partition's
// previous run has ended (Sarama refuses a second consumer of a partition until the first has
// closed, and the previous run's records go before the next's).
type assigned struct {
	tp        protocol.TopicPartition
	in        bool   // assigned now (one unassigned keeps its last run, which a later run waits for)
	run       *run   // the latest run (nil: none yet)
	start     *int64 // where the next run starts (nil: where the reset policy says)
	pending   bool   // a run is to be started
	reset     bool   // ... because the last run ended out of range: where the reset policy says, reported
	notBefore time.Time
}

// run is one PartitionConsumer's life: its records go into the poll channel until it closes.
type run struct {
	src  *source
	pc   sarama.PartitionConsumer // nil until it started (c.mu)
	done chan struct{}            // closed once its partition consumer has closed
}

func (c *consumer) assign(tps []protocol.TopicPartition) error {
	if c.mode == "subscribe" {
		return protocol.Errorf("IllegalStateError", "assign after subscribe")
	}
	if err := c.startClient(); err != nil {
		return err
	}
	if c.sc == nil {
		sc, err := sarama.NewConsumerFromClient(c.client)
		if err != nil {
			return err
		}
		c.sc = sc
	}
	c.mode = "assign"
	want := map[protocol.TopicPartition]bool{}
	for _, tp := range tps {
		want[tp] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for tp, a := range c.parts {
		if a.in && !want[tp] {
			a.in, a.pending = false, false
			c.stopRun(a)
			delete(c.positions, tp)
		}
	}
	for _, tp := range tps {
		a := c.parts[tp]
		if a == nil {
			a = &assigned{tp: tp}
			c.parts[tp] = a
		}
		if !a.in {
			// a partition never sought starts where the reset policy says, at the first poll
			a.in, a.pending, a.start, a.reset, a.notBefore = true, true, nil, false, time.Time{}
		}
	}
	return nil
}

// stopRun drops a's run: its records are not returned any more, and its partition consumer
// closes (c.mu held).
func (c *consumer) stopRun(a *assigned) {
	if a.run == nil {
		return
	}
	a.run.src.drop()
	if a.run.pc != nil {
		a.run.pc.AsyncClose()
	}
}

func (c *consumer) seekAssigned(tp protocol.TopicPartition, offset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.parts[tp]
	if a == nil || !a.in {
		return protocol.Errorf("IllegalStateError", "No current assignment for partition %s-%d", tp.Topic, tp.Partition)
	}
	c.stopRun(a)
	at := offset
	a.start, a.pending, a.reset, a.notBefore = &at, true, false, time.Time{}
	return nil
}

// startRuns starts the runs that are due (poll); next is when the next one not due yet is (zero:
// none).
func (c *consumer) startRuns(now time.Time) (next time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.parts {
		if !a.in || !a.pending {
			continue
		}
		if now.Before(a.notBefore) {
			if next.IsZero() || a.notBefore.Before(next) {
				next = a.notBefore
			}
			continue
		}
		prev := a.run
		r := &run{src: newSource(), done: make(chan struct{})}
		a.run, a.pending = r, false
		go c.runPartition(a, r, prev, a.start, a.reset)
	}
	return next
}

// push hands one record (or event) of src to poll; false when src was dropped meanwhile.
func (c *consumer) push(r record) bool {
	select {
	case c.records <- r:
		return true
	case <-r.src.gone:
		return false
	}
}

// runPartition is one run: it waits for the previous run to end, starts the partition consumer,
// and forwards its records until it closes.
func (c *consumer) runPartition(a *assigned, r *run, prev *run, start *int64, reset bool) {
	defer c.poke()
	defer close(r.done)
	if prev != nil {
		<-prev.done
	}
	if r.src.dropped() {
		return
	}
	pc, landed, err := c.consumePartition(a.tp, start, reset)
	if err != nil {
		protocol.Logf("cannot start consuming %s-%d: %v (again in 1 s)", a.tp.Topic, a.tp.Partition, err)
		c.mu.Lock()
		if a.run == r && a.in {
			a.pending, a.notBefore = true, time.Now().Add(time.Second)
		}
		c.mu.Unlock()
		return
	}
	c.mu.Lock()
	r.pc = pc
	dropped := r.src.dropped()
	c.mu.Unlock()
	if dropped {
		pc.AsyncClose()
	} else if landed >= 0 {
		// in the records' stream, so poll writes it after the previous run's records and before
		// this run's
		c.push(record{src: r.src, event: positionEvent(a.tp, landed, "reset"),
			at: protocol.PartitionOffset{Topic: a.tp.Topic, Partition: a.tp.Partition, Offset: landed}})
	}
	errs := make(chan struct{})
	go func() {
		defer close(errs)
		for e := range pc.Errors() {
			c.partitionError(a, r, e)
		}
	}()
	next := int64(-1)
	for m := range pc.Messages() {
		next = m.Offset + 1
		if !c.push(record{msg: m, src: r.src}) {
			c.served.forget(m)
		}
	}
	<-errs
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.run == r && a.in && !a.pending && !r.src.dropped() {
		// closed by Sarama without a seek or an out-of-range error (it gave up on the partition:
		// Consumer.Retry.Max): on again after the last record it handed over
		protocol.Logf("the partition consumer of %s-%d closed by itself: starting another", a.tp.Topic, a.tp.Partition)
		if next >= 0 {
			a.start = &next
		}
		a.pending, a.reset, a.notBefore = true, false, time.Time{}
	}
}

// partitionError handles one error of a run's partition consumer: an out-of-range fetch stops
// it (Sarama's consumer leaves the choice to the application), and the next run starts where the
// reset policy says, as Java's consumer goes on; the rest go to the log.
func (c *consumer) partitionError(a *assigned, r *run, e *sarama.ConsumerError) {
	if !errors.Is(e.Err, sarama.ErrOffsetOutOfRange) {
		protocol.Logf("consuming %s-%d: %v", e.Topic, e.Partition, e.Err)
		return
	}
	c.mu.Lock()
	mine := a.run == r && a.in && !r.src.dropped()
	if mine {
		a.pending, a.reset, a.notBefore = true, true, time.Time{}
	}
	c.mu.Unlock()
	if mine {
		protocol.Logf("%s-%d: %v: starting again where the reset policy says", a.tp.Topic, a.tp.Partition, e.Err)
		c.poke()
	}
}

// consumePartition starts a partition consumer: at start (nil: where the reset policy says), or
// where the reset policy says and reported (reset: landed is where, else -1). An offset out of the
// log's range (a seek past its end or below its start, which Sarama refuses at once rather than
// at the first fetch) is a reset too, as Java's consumer makes it.
func (c *consumer) consumePartition(tp protocol.TopicPartition, start *int64, reset bool) (sarama.PartitionConsumer, int64, error) {
	initial := c.conf.Consumer.Offsets.Initial
	offset, landed := initial, int64(-1)
	if reset {
		// the offset the reset policy names, asked here so that it can be reported: the
		// partition consumer starts there
		at, err := c.client.GetOffset(tp.Topic, tp.Partition, initial)
		if err != nil {
			return nil, -1, err
		}
		offset, landed = at, at
	} else if start != nil {
		offset = *start
	}
	for tries := 0; ; tries++ {
		pc, err := c.sc.ConsumePartition(tp.Topic, tp.Partition, offset)
		if err == nil {
			return pc, landed, nil
		}
		if !errors.Is(err, sarama.ErrOffsetOutOfRange) || tries >= 3 {
			return nil, -1, err
		}
		at, err := c.client.GetOffset(tp.Topic, tp.Partition, initial)
		if err != nil {
			return nil, -1, err
		}
		offset, landed = at, at
	}
}

// closeAssigned closes every partition consumer, waiting up to 15 s for them.
func (c *consumer) closeAssigned() {
	c.mu.Lock()
	var runs []*run
	for _, a := range c.parts {
		a.in, a.pending = false, false
		if a.run != nil {
			c.stopRun(a)
			runs = append(runs, a.run)
		}
	}
	c.mu.Unlock()
	deadline := time.Now().Add(15 * time.Second)
	for _, r := range runs {
		if !waitClosed(r.done, deadline) {
			protocol.Logf("partition consumers still closing at the close's deadline")
			return
		}
	}
	if err := c.sc.Close(); err != nil {
		protocol.Logf("closing the consumer: %v", err)
	}
}
