package protocol

import (
	"errors"
	"sort"
	"strings"
	"sync"
)

// ErrAckOutcomeUnknown is the class of an acknowledgement outcome the library did not tell
// exactly (the harness reads it as info: maybe applied, maybe not).
const ErrAckOutcomeUnknown = "AckOutcomeUnknown"

// Acked is one "acked" event of a share consumer (docs/adding-a-client.md, "Share groups"):
// how the acknowledgements of some offsets of one partition ended. Error is nil when they were
// applied.
type Acked struct {
	Topic     string
	Partition int32
	Offsets   []int64
	Error     error
}

// Event is the event line the harness reads.
func (a Acked) Event() map[string]any {
	var text any
	if a.Error != nil {
		text = ErrorText(a.Error)
	}
	return map[string]any{"event": "acked", "topic": a.Topic, "partition": a.Partition, "offsets": a.Offsets, "error": text}
}

// AckBook ties a share consumer's per-partition acknowledgement results to the offsets the
// worker marked, for a library that reports one result per partition per request it sent,
// without the offsets (franz-go's ShareAckCallback).
//
// The worker marks offsets (Mark) and the library's callback reports results (Result). When the
// library says every marked acknowledgement has been reported (franz-go: FlushAcks returned),
// Settle ends a window: for each partition marked in it, the window's results for that
// partition cover every offset marked there, because the library sends a partition's pending
// acknowledgements together and reports each request once. One result is their outcome. More
// than one (the library sent the marks in parts, or reported a part of its own, such as gaps it
// acknowledged for itself, beside them) is still exact when the parts agree: all applied, or all
// failed with one error. Parts that disagree leave each offset's outcome unknown, and Settle
// says so (ErrAckOutcomeUnknown) rather than guess which offsets each part covered. A partition
// marked with no result in the window is unknown too. Results for a partition not marked in the
// window cover none of the worker's offsets and are dropped.
type AckBook struct {
	Library string // named in the unknown outcomes' texts
	mu      sync.Mutex
	marked  map[TopicPartition][]int64
	results map[TopicPartition][]error
}

// Mark records offsets of a partition the worker asked the library to acknowledge.
func (b *AckBook) Mark(tp TopicPartition, offsets ...int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.marked == nil {
		b.marked = map[TopicPartition][]int64{}
	}
	b.marked[tp] = append(b.marked[tp], offsets...)
}

// Result records one per-partition result as the library reported it (nil: applied); safe to
// call from the library's goroutines.
func (b *AckBook) Result(tp TopicPartition, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.results == nil {
		b.results = map[TopicPartition][]error{}
	}
	b.results[tp] = append(b.results[tp], err)
}

// Pending is whether offsets are marked and not yet settled.
func (b *AckBook) Pending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.marked) > 0
}

// Settle ends the window (see AckBook): the outcome of every offset marked in it, one Acked per
// partition, in topic and partition order.
func (b *AckBook) Settle() []Acked {
	b.mu.Lock()
	marked, results := b.marked, b.results
	b.marked, b.results = nil, nil
	b.mu.Unlock()
	tps := make([]TopicPartition, 0, len(marked))
	for tp := range marked {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	out := make([]Acked, 0, len(tps))
	for _, tp := range tps {
		offsets := append([]int64(nil), marked[tp]...)
		sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
		out = append(out, Acked{tp.Topic, tp.Partition, offsets, b.outcome(results[tp])})
	}
	return out
}

// outcome is the one outcome the results of a partition's window say for all its offsets.
func (b *AckBook) outcome(results []error) error {
	if len(results) == 0 {
		return Errorf(ErrAckOutcomeUnknown, "%s reported no outcome for these acknowledgements", b.Library)
	}
	first := results[0]
	for _, r := range results[1:] {
		if !sameOutcome(first, r) {
			texts := make([]string, len(results))
			for i, e := range results {
				texts[i] = "ok"
				if e != nil {
					texts[i] = ErrorText(e)
				}
			}
			return Errorf(ErrAckOutcomeUnknown, "%s reported these acknowledgements in %d parts that disagree (%s) "+
				"without the offsets of each", b.Library, len(results), strings.Join(texts, "; "))
		}
	}
	return first
}

func sameOutcome(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return errors.Is(a, b) || ErrorText(a) == ErrorText(b)
}
