package main

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"highwater/protocol"

	"github.com/IBM/sarama"
)

// producer is Sarama's AsyncProducer: each send carries its id in ProducerMessage.Metadata, and
// two goroutines turn what comes back on Successes() and Errors() into outcomes.
type producer struct {
	out    *protocol.Out
	client sarama.Client
	txn    string // the transactional id ("": none)
	acks0  bool   // acks=0: a success says nothing of the offset

	mu       sync.Mutex
	idle     *sync.Cond // inflight reached 0
	inflight int64      // sends handed to Sarama without an outcome yet
	ap       sarama.AsyncProducer
	readers  sync.WaitGroup
	// the error of the last commit, until the next begin (abort_transaction)
	commitErr error

	// one transactional call at a time, one abandoned at its deadline included (bounded)
	txnMu sync.Mutex
}

func newProducer(s settings, conf *sarama.Config, o *protocol.Out) (*producer, error) {
	client, err := sarama.NewClient(s.Bootstrap, conf)
	if err != nil {
		return nil, err
	}
	p := &producer{out: o, client: client, acks0: conf.Producer.RequiredAcks == sarama.NoResponse}
	p.idle = sync.NewCond(&p.mu)
	if s.TransactionalID != nil {
		// a transactional producer is made at init_transactions: Sarama asks for the producer
		// id (InitProducerId, which fences an older producer of the same transactional id) when
		// the producer is made, so made here a coordinator out of reach would fail the start
		p.txn = *s.TransactionalID
		return p, nil
	}
	// an idempotent producer asks for its producer id here, from any broker
	ap, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	p.started(ap)
	return p, nil
}

// started keeps ap and reads its outcomes until it is closed.
func (p *producer) started(ap sarama.AsyncProducer) {
	p.mu.Lock()
	p.ap = ap
	p.mu.Unlock()
	p.readers.Add(2)
	go func() {
		defer p.readers.Done()
		for m := range ap.Successes() {
			offset := m.Offset
			if p.acks0 {
				offset = -1 // not known: no broker answered
			}
			p.outcome(m, offset, nil)
		}
	}()
	go func() {
		defer p.readers.Done()
		for e := range ap.Errors() {
			p.outcome(e.Msg, -1, e.Err)
		}
	}()
}

// outcome writes one send's outcome (a failure is always info: protocol.Out.Outcome).
func (p *producer) outcome(m *sarama.ProducerMessage, offset int64, err error) {
	id, ok := m.Metadata.(int64)
	if !ok {
		protocol.Logf("an outcome of a message without an id: %v", err)
		return
	}
	p.out.Outcome(id, offset, err)
	p.mu.Lock()
	p.inflight--
	if p.inflight == 0 {
		p.idle.Broadcast()
	}
	p.mu.Unlock()
}

func (p *producer) producer() sarama.AsyncProducer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ap
}

func (p *producer) Send(id int64, topic string, partition int32, value string) {
	p.mu.Lock()
	ap := p.ap
	if ap != nil {
		p.inflight++
	}
	p.mu.Unlock()
	if ap == nil {
		p.out.Outcome(id, -1, protocol.Errorf("IllegalStateError", "a send before init_transactions"))
		return
	}
	// may wait while Sarama's buffers are full (as Java's send waits up to max.block.ms)
	ap.Input() <- &sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.StringEncoder(value), Metadata: id}
}

// settle waits until every send so far has an outcome, or the deadline.
func (p *producer) settle(deadline time.Time) error {
	wake := time.AfterFunc(time.Until(deadline), func() {
		p.mu.Lock()
		p.idle.Broadcast()
		p.mu.Unlock()
	})
	defer wake.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.inflight > 0 {
		if !time.Now().Before(deadline) {
			return protocol.Errorf("TimeoutException", "%d sends without an outcome at the deadline", p.inflight)
		}
		p.idle.Wait()
	}
	return nil
}

func (p *producer) Handle(c *protocol.Command) (map[string]any, error) {
	deadline := time.Now().Add(ms(c.TimeoutMs))
	switch c.Op {
	case "flush":
		// Sarama has no flush: what it gathered goes out every Flush.Frequency by itself
		return map[string]any{}, p.settle(deadline)
	case "close":
		err := p.settle(deadline)
		p.close(deadline)
		return map[string]any{}, err
	case "init_transactions", "begin_transaction", "commit_transaction", "abort_transaction", "send_offsets":
		if p.txn == "" {
			return nil, protocol.Errorf("IllegalStateError", "%s on a producer without a transactional id", c.Op)
		}
		return map[string]any{}, p.transaction(c, deadline)
	}
	return nil, fmt.Errorf("unknown producer op %s", c.Op)
}

// close shuts the producer down (AsyncClose: the outcome readers drain what Sarama still
// returns; Close would take the errors from them) and then the client, waiting for it until the
// deadline; the worker exits after close, and the harness ends the sends still without an
// outcome as info.
func (p *producer) close(deadline time.Time) {
	if ap := p.producer(); ap != nil {
		ap.AsyncClose()
		drained := make(chan struct{})
		go func() {
			p.readers.Wait()
			close(drained)
		}()
		select {
		case <-drained:
		case <-time.After(time.Until(deadline)):
			protocol.Logf("the producer was still shutting down at the close's deadline")
			return
		}
	}
	if err := p.client.Close(); err != nil {
		protocol.Logf("closing the client: %v", err)
	}
}

// bounded runs one transactional call, answered by the deadline: Sarama's transactional calls
// take no deadline (each retries up to Producer.Transaction.Retry.Max times), so the call runs
// in a goroutine and, at the deadline, the answer is TimeoutException while the call goes on.
// An abandoned call holds the transactional lock until it ends (its end is logged): the next
// transactional call waits for it, within its own deadline, and Sarama then sees them in order;
// its outcome is unknown to the harness, as a Java call's that timed out is.
func (p *producer) bounded(op string, deadline time.Time, call func() error) error {
	done := make(chan error, 1)
	go func() {
		p.txnMu.Lock()
		defer p.txnMu.Unlock()
		done <- call()
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		go func() {
			err := <-done
			protocol.Logf("%s, abandoned at its deadline, ended: %v", op, err)
		}()
		return protocol.Errorf("TimeoutException", "%s did not end within its deadline", op)
	}
}

func (p *producer) setCommitErr(err error) {
	p.mu.Lock()
	p.commitErr = err
	p.mu.Unlock()
}

func (p *producer) lastCommitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.commitErr
}

// transaction runs one of the transactional commands (docs/adding-a-client.md).
func (p *producer) transaction(c *protocol.Command, deadline time.Time) error {
	if c.Op == "init_transactions" {
		return p.bounded(c.Op, deadline, func() error {
			if p.producer() != nil {
				return nil // made by an earlier init_transactions that ended after its deadline
			}
			ap, err := sarama.NewAsyncProducerFromClient(p.client)
			if err != nil {
				return err
			}
			p.started(ap)
			return nil
		})
	}
	ap := p.producer()
	if ap == nil {
		return protocol.Errorf("IllegalStateError", "%s before init_transactions", c.Op)
	}
	switch c.Op {
	case "begin_transaction":
		// local (no request: Sarama only changes its transaction's state), and asked with no
		// deadline (timeout 0): a bounded call would race its zero timer and lose, so it runs
		// here, after any abandoned call still holding the transactional lock
		p.txnMu.Lock()
		defer p.txnMu.Unlock()
		p.setCommitErr(nil)
		return ap.BeginTxn()
	case "commit_transaction":
		// every send's outcome first, so they all come before the commit's answer (CommitTxn
		// waits for Sarama's own in-flight messages, not for their outcome lines)
		if err := p.settle(deadline); err != nil {
			return err // nothing handed to Sarama
		}
		return p.bounded(c.Op, deadline, func() error {
			err := ap.CommitTxn()
			p.setCommitErr(err)
			return err
		})
	case "abort_transaction":
		return p.bounded(c.Op, deadline, func() error {
			if err := ap.AbortTxn(); err != nil {
				return err
			}
			return abortProof(p.lastCommitErr())
		})
	case "send_offsets":
		if c.Group == nil || c.Group.GroupID == "" {
			return protocol.Errorf("IllegalArgument", "send_offsets needs the consumer's group metadata")
		}
		offsets := map[string][]*sarama.PartitionOffsetMetadata{}
		for _, o := range c.Offsets {
			offsets[o.Topic] = append(offsets[o.Topic], &sarama.PartitionOffsetMetadata{Partition: o.Partition, Offset: o.Offset})
		}
		// Sarama only notes the offsets here: it sends them (AddOffsetsToTxn, then
		// TxnOffsetCommit to the group's coordinator) at CommitTxn, whose answer says how that went
		return p.bounded(c.Op, deadline, func() error { return addOffsets(ap, offsets, c.Group) })
	}
	return fmt.Errorf("unknown transactional op %s", c.Op)
}

// abortProof is the answer to an abort Sarama reported done, given the error of the commit
// before it (nil: none failed). Sarama aborts with EndTxn(abort) whenever the transaction
// reached the coordinator (a partition or the offsets added), and the coordinator refuses an
// abort of a commit it has prepared or completed (INVALID_TXN_STATE, fatal to Sarama), so a done
// abort is an abort; otherwise nothing reached the coordinator, and nothing was committed. With
// one exception from 1.41 to 1.60 at least (1.61.1 makes that error fatal): after an EndTxn
// answered INVALID_PRODUCER_ID_MAPPING Sarama aborts with InitProducerId instead of EndTxn
// (transaction_manager.go's finishTransaction), and an InitProducerId that succeeds does not say
// whether it aborted an open transaction or completed a commit the coordinator had prepared;
// such an abort is answered as an error (outcome unknown), never ok, as the franz-go worker
// answers its own.
func abortProof(commitErr error) error {
	if commitErr != nil && errors.Is(commitErr, sarama.ErrInvalidProducerIDMapping) {
		return protocol.Errorf("UnknownOutcome", "the abort after a commit that failed (%v) proves nothing: Sarama then aborts by InitProducerId, which may complete a prepared commit", commitErr)
	}
	return nil
}
