// Package protocol is the worker protocol's side that does not depend on the library
// (docs/adding-a-client.md), shared by every Go worker (franz-go's, Sarama's): the command
// lines, writing replies, events and send outcomes in order, and leaving when the parent is gone.
package protocol

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Version is the worker protocol version this worker speaks (3: batch lines).
const Version = 3

// Out writes protocol lines; one lock keeps lines whole and in the order they were written,
// so a reply written after an outcome reaches the harness after it.
type Out struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func NewOut() *Out {
	return &Out{w: bufio.NewWriterSize(os.Stdout, 1<<16)}
}

// Line writes one JSON value and a newline and flushes at once (replies and events are waited
// for; outcomes are few per line and their order with replies is what matters).
func (o *Out) Line(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"event": "log", "error": err.Error()})
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Write(data)
	o.w.WriteByte('\n')
	o.w.Flush()
}

// Outcome writes one send's outcome: ok with its offset, or info (the write may have happened:
// this worker never says fail, which would claim it provably did not).
func (o *Out) Outcome(id int64, offset int64, err error) {
	if err == nil {
		o.Line(map[string]any{"oks": []int64{id, offset}})
		return
	}
	o.Line(map[string]any{"sends": []any{[]any{id, "info", nil, ErrorText(err)}}})
}

// ErrorText is an error as the harness reads it: its type without its package, then its text.
func ErrorText(err error) string {
	if err == nil {
		return "Error: unknown error"
	}
	// the error's type without its package (franz-go's broker errors are *kerr.Error, whose
	// message names the Kafka error code); a plain error is "Error"
	name := strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
	name = name[strings.LastIndex(name, ".")+1:]
	if name == "errorString" || name == "wrapError" || name == "" {
		name = "Error"
	}
	return name + ": " + err.Error()
}

// Logf writes one timestamped line to the worker's log (its stderr).
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s highwater-worker: %s\n", time.Now().UTC().Format(time.RFC3339Nano), fmt.Sprintf(format, args...))
}

// WatchParent ends the worker within half a second of its parent's death.
func WatchParent() {
	parent := os.Getppid()
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			if os.Getppid() != parent {
				Logf("parent %d is gone, exiting", parent)
				os.Exit(3)
			}
		}
	}()
}

// Command is one line from the harness: a command with an id and an op, or sends.
type Command struct {
	ID        int64             `json:"id"`
	Op        string            `json:"op"`
	Role      string            `json:"role"`
	Config    json.RawMessage   `json:"config"`
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Value     string            `json:"value"`
	Offset    int64             `json:"offset"`
	TimeoutMs int64             `json:"timeout_ms"`
	RawParts  json.RawMessage   `json:"partitions"`
	Topics    []string          `json:"topics"`
	Offsets   []PartitionOffset `json:"offsets"`
	Group     *GroupMetadata    `json:"group"`
	Sends     [][]any           `json:"sends"`
	First     int64             `json:"first"`
	Values    []string          `json:"values"`
}

// TopicPartition is a partition by topic name.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// PartitionOffset is an offset of a partition, as commit and send_offsets carry them.
type PartitionOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// PartitionList reads a command's "partitions": topic-partition objects (assign) or, in a batch
// line, the partition of each value.
func (c *Command) PartitionList() ([]TopicPartition, []int32, error) {
	if len(c.RawParts) == 0 {
		return nil, nil, nil
	}
	if c.Op == "batch" {
		var ps []int32
		err := json.Unmarshal(c.RawParts, &ps)
		return nil, ps, err
	}
	var tps []TopicPartition
	err := json.Unmarshal(c.RawParts, &tps)
	return tps, nil, err
}

// GroupMetadata is a consumer's group_metadata reply, as send_offsets carries it back.
type GroupMetadata struct {
	GroupID         string  `json:"group_id"`
	GenerationID    int32   `json:"generation_id"`
	MemberID        string  `json:"member_id"`
	GroupInstanceID *string `json:"group_instance_id"`
}
