//go:build highwater_share

// franz-go's share consumer (KIP-932, from 1.21.0) in the role share_consumer
// (docs/adding-a-client.md, "Share groups"); harness/clients/franz_go.py builds with the tag
// highwater_share from that version (share_none.go before it).
//
// franz-go differs from Kafka's Java client in two ways the role has to bridge:
//
//   - its acknowledgement callback (ShareAckCallback) reports one result per partition of each
//     request it sent, without the offsets. The worker marks each poll's acknowledgements at
//     once, and at commit flushes them (FlushAcks, which returns once every marked one has been
//     reported) and settles its book (protocol.AckBook): the results of the window are the
//     outcome of every offset marked in it, and results that disagree leave those offsets'
//     outcome unknown rather than guessed;
//   - its next poll accepts whatever the last one returned and nobody acknowledged
//     (finalizePreviousPoll). Java's explicit mode refuses such a poll; so does this worker,
//     so no record is ever accepted without the harness asking.
//
// Between a commit that timed out and the next, results keep arriving into the same window,
// which the next poll or commit settles once the library says nothing is pending.

package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"highwater/protocol"

	"github.com/twmb/franz-go/pkg/kgo"
)

type heldKey struct {
	tp     protocol.TopicPartition
	offset int64
}

type shareConsumer struct {
	s    settings
	out  *protocol.Out
	cl   *kgo.Client
	book *protocol.AckBook
	// the records of the last poll, and which of them the harness has acknowledged
	held   map[heldKey]*kgo.Record
	marked map[heldKey]bool
}

var shareKinds = map[string]kgo.AckStatus{"accept": kgo.AckAccept, "release": kgo.AckRelease, "reject": kgo.AckReject}

func newShareConsumer(s settings, out *protocol.Out) (protocol.Role, error) {
	if s.GroupID == nil || *s.GroupID == "" {
		return nil, errors.New("a share consumer needs a group id")
	}
	if _, err := s.common(); err != nil {
		return nil, err
	}
	return &shareConsumer{s: s, out: out, book: &protocol.AckBook{Library: "franz-go"}}, nil
}

func (c *shareConsumer) Send(int64, string, int32, string) {}

func (c *shareConsumer) acked(_ *kgo.Client, results kgo.ShareAckResults) {
	for _, r := range results {
		c.book.Result(protocol.TopicPartition{Topic: r.Topic, Partition: r.Partition}, r.Err)
	}
}

// settle writes the outcomes of the window when franz-go has reported every marked
// acknowledgement (FlushAcks returned within wait), else leaves the window open.
func (c *shareConsumer) settle(wait time.Duration) error {
	if !c.book.Pending() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := c.cl.FlushAcks(ctx); err != nil {
		return err
	}
	for _, a := range c.book.Settle() {
		c.out.Line(a.Event())
	}
	return nil
}

func (c *shareConsumer) Handle(cmd *protocol.Command) (map[string]any, error) {
	ok := map[string]any{}
	switch cmd.Op {
	case "subscribe":
		if c.cl != nil {
			return nil, errors.New("the share consumer is already subscribed")
		}
		opts, err := c.s.common()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.ShareGroup(*c.s.GroupID), kgo.ConsumeTopics(cmd.Topics...), kgo.ShareAckCallback(c.acked))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return nil, err
		}
		c.cl = cl
		return ok, nil
	case "poll":
		return c.poll(cmd.TimeoutMs)
	case "acknowledge":
		return ok, c.acknowledge(cmd.Acks)
	case "commit":
		if c.cl == nil {
			return ok, nil
		}
		if err := c.settle(ms(cmd.TimeoutMs)); err != nil {
			return nil, protocol.Errorf("TimeoutException", "acknowledgements not all reported within %d ms: %v", cmd.TimeoutMs, err)
		}
		return ok, nil
	case "close":
		if c.cl != nil {
			// one deadline for both: the harness waits timeout_ms for the reply
			deadline := time.Now().Add(ms(cmd.TimeoutMs))
			if err := c.settle(ms(cmd.TimeoutMs) / 2); err != nil {
				protocol.Logf("close: acknowledgements not all reported: %v", err)
			}
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			c.cl.LeaveGroupContext(ctx)
			cancel()
			c.cl.Close()
		}
		return ok, nil
	}
	return nil, fmt.Errorf("unknown share consumer op %s", cmd.Op)
}

// unacknowledged is the last poll's records the harness has not acknowledged, by offset.
func (c *shareConsumer) unacknowledged() []string {
	var left []string
	for k := range c.held {
		if !c.marked[k] {
			left = append(left, fmt.Sprintf("%s-%d@%d", k.tp.Topic, k.tp.Partition, k.offset))
		}
	}
	sort.Strings(left)
	return left
}

func (c *shareConsumer) poll(timeoutMs int64) (map[string]any, error) {
	if c.cl == nil {
		return nil, errors.New("poll before subscribe")
	}
	if left := c.unacknowledged(); len(left) > 0 {
		return nil, protocol.Errorf("IllegalStateException",
			"the last poll's records %s are not acknowledged (franz-go's next poll would accept them)", strings.Join(left, ", "))
	}
	if err := c.settle(time.Millisecond); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	fetches, err := pollRecords(c.cl, timeoutMs, c.s.MaxPollRecords, func(topic string, partition int32, err error) {
		protocol.Logf("share fetch error on %s-%d: %v", topic, partition, err)
	})
	if err != nil {
		return nil, err
	}
	c.held, c.marked = map[heldKey]*kgo.Record{}, map[heldKey]bool{}
	type part struct {
		Topic      string   `json:"topic"`
		Partition  int32    `json:"partition"`
		Offsets    []int64  `json:"offsets"`
		Values     []string `json:"values"`
		Deliveries []int32  `json:"deliveries"`
	}
	var parts []*part
	index := map[protocol.TopicPartition]*part{}
	fetches.EachRecord(func(r *kgo.Record) {
		tp := protocol.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		p := index[tp]
		if p == nil {
			p = &part{Topic: r.Topic, Partition: r.Partition}
			index[tp] = p
			parts = append(parts, p)
		}
		p.Offsets = append(p.Offsets, r.Offset)
		p.Values = append(p.Values, string(r.Value))
		p.Deliveries = append(p.Deliveries, r.DeliveryCount())
		c.held[heldKey{tp, r.Offset}] = r
	})
	if parts == nil {
		parts = []*part{}
	}
	return map[string]any{"parts": parts}, nil
}

// acknowledge marks [topic, partition, offset, kind] acknowledgements of the last poll's records
// (sent at commit), all of them before any is handed to franz-go: one unknown record or kind
// refuses the whole line.
func (c *shareConsumer) acknowledge(acks [][]any) error {
	byKind := map[kgo.AckStatus][]*kgo.Record{}
	seen := map[heldKey]bool{} // this line's records
	for _, a := range acks {
		if len(a) != 4 {
			return fmt.Errorf("an acknowledgement is [topic, partition, offset, kind], not %v", a)
		}
		topic, _ := a[0].(string)
		partition, _ := a[1].(float64)
		offset, _ := a[2].(float64)
		name, _ := a[3].(string)
		k := heldKey{protocol.TopicPartition{Topic: topic, Partition: int32(partition)}, int64(offset)}
		r := c.held[k]
		if r == nil {
			return fmt.Errorf("no record %s-%d@%d in the last poll", topic, int32(partition), int64(offset))
		}
		kind, known := shareKinds[name]
		if !known {
			return fmt.Errorf("unknown acknowledgement kind %q", name)
		}
		if c.marked[k] || seen[k] {
			return fmt.Errorf("record %s-%d@%d is already acknowledged", topic, int32(partition), int64(offset))
		}
		seen[k] = true
		byKind[kind] = append(byKind[kind], r)
	}
	for k := range seen {
		c.marked[k] = true
		c.book.Mark(k.tp, k.offset)
	}
	for kind, records := range byKind {
		c.cl.MarkAcks(kind, records...)
	}
	return nil
}
