// Package protocol is the worker protocol's side that does not depend on the library
// (docs/adding-a-client.md), shared by every Go worker (franz-go's, Sarama's): the command
// loop (Serve), writing replies, events and send outcomes in order, and leaving when the parent
// is gone.
package protocol

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode"
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

// Classed is an error that names its class itself: a worker's own errors (a deadline it kept,
// an outcome it cannot know), which a plain error would name only "Error".
type Classed interface {
	error
	ErrorClass() string
}

// ClassedError is a Classed error: its class, and the error it wraps (its text).
type ClassedError struct {
	Class string
	Err   error
}

func (e *ClassedError) Error() string      { return e.Err.Error() }
func (e *ClassedError) ErrorClass() string { return e.Class }
func (e *ClassedError) Unwrap() error      { return e.Err }

// Errorf is a Classed error of class, its text and what it wraps as fmt.Errorf makes them.
func Errorf(class, format string, args ...any) error {
	return &ClassedError{Class: class, Err: fmt.Errorf(format, args...)}
}

// ErrorText is an error as the harness reads it: its type without its package (or the class a
// Classed error names), then its text.
func ErrorText(err error) string {
	if err == nil {
		return "Error: unknown error"
	}
	var classed Classed
	if errors.As(err, &classed) {
		return classed.ErrorClass() + ": " + err.Error()
	}
	// the error's type without its package (franz-go's broker errors are *kerr.Error, whose
	// message names the Kafka error code; Sarama's are sarama.KError); a plain error, or one
	// of a type its package keeps to itself (errors.New's, fmt.Errorf's, Sarama's wrapped
	// sentinels), is "Error"
	name := strings.TrimPrefix(fmt.Sprintf("%T", err), "*")
	name = name[strings.LastIndex(name, ".")+1:]
	if name == "" || !unicode.IsUpper([]rune(name)[0]) {
		name = "Error"
	}
	return name + ": " + err.Error()
}

// ModuleVersion is the version (without its "v") of the module at path this worker was built
// against, as the Go toolchain recorded it in the binary ("unknown" when it did not).
func ModuleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == path {
				return strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	return "unknown"
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
	// a share consumer's acknowledgements: [topic, partition, offset, kind]
	Acks [][]any `json:"acks"`
}

// Settings are the library-neutral ProducerSettings and ConsumerSettings of
// harness/client_common.py as the harness writes them in a worker's first line (one struct: the
// fields of both). A worker embeds it in a type of its own, which maps it to its library.
type Settings struct {
	Bootstrap            []string        `json:"bootstrap"`
	ClientID             string          `json:"client_id"`
	Acks                 json.RawMessage `json:"acks"`
	Idempotence          bool            `json:"idempotence"`
	Retries              int             `json:"retries"`
	RequestTimeoutMs     int64           `json:"request_timeout_ms"`
	DeliveryTimeoutMs    int64           `json:"delivery_timeout_ms"`
	LingerMs             int64           `json:"linger_ms"`
	MaxInFlight          int             `json:"max_in_flight"`
	TransactionalID      *string         `json:"transactional_id"`
	TransactionTimeoutMs int64           `json:"transaction_timeout_ms"`
	Security             struct {
		Protocol string `json:"protocol"`
	} `json:"security"`
	ClientRack       *string `json:"client_rack"`
	GroupID          *string `json:"group_id"`
	AutoOffsetReset  string  `json:"auto_offset_reset"`
	MaxPollRecords   int     `json:"max_poll_records"`
	MetadataMaxAgeMs int64   `json:"metadata_max_age_ms"`
	FetchMaxWaitMs   int64   `json:"fetch_max_wait_ms"`
	IsolationLevel   string  `json:"isolation_level"`
	SessionTimeoutMs *int64  `json:"session_timeout_ms"`
	GroupProtocol    string  `json:"group_protocol"`
	// KIP-848's server-side assignor (uniform or range; none: the broker's first)
	GroupRemoteAssignor *string `json:"group_remote_assignor"`
	// KIP-392: how long a rack consumer fetches from the replica the leader named before it asks
	// the leader again (none: the library's own); franz-go's alone (the harness refuses it for
	// the others)
	PreferredReplicaRecheckMs *int64 `json:"preferred_replica_recheck_ms"`
}

// ReadSettings reads a worker's first line's config, {"client", "settings"}, into settings (the
// worker's type embedding Settings), refusing a config written for another client.
func ReadSettings(cmd *Command, client string, settings any) error {
	var cfg struct {
		Client   string          `json:"client"`
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(cmd.Config, &cfg); err != nil {
		return err
	}
	if cfg.Client != client {
		return fmt.Errorf("no %s worker for client %s", client, cfg.Client)
	}
	return json.Unmarshal(cfg.Settings, settings)
}

// AcksText is the acks setting as text: "all", "-1", "1", "0", or "" when unset (the harness
// writes a number or a string).
func (s *Settings) AcksText() string { return strings.Trim(string(s.Acks), `"`) }

// Part is one entry of a poll reply: a partition's records served by one replica (nil: not
// known), offsets as runs of consecutive offsets ([first, count, ...]), leader epochs as runs of
// one epoch ([epoch or null, count, ...]), one value a record (docs/adding-a-client.md).
type Part struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replica   *int32   `json:"replica"`
	Offsets   []int64  `json:"offsets"`
	Values    []string `json:"values"`
	Epochs    []any    `json:"epochs"`
	next      int64
	epoch     int32
}

type partKey struct {
	topic     string
	partition int32
	replica   int32
}

// Parts builds a poll reply's parts from records in the order they came.
type Parts struct {
	list  []*Part
	index map[partKey]*Part
}

// Add appends a record: its serving replica (-1: not known) and leader epoch (-1: none).
func (ps *Parts) Add(topic string, partition, replica int32, offset int64, epoch int32, value string) {
	key := partKey{topic, partition, replica}
	p := ps.index[key]
	if p == nil {
		if ps.index == nil {
			ps.index = map[partKey]*Part{}
		}
		p = &Part{Topic: topic, Partition: partition, next: -1}
		if replica >= 0 {
			rep := replica
			p.Replica = &rep
		}
		ps.index[key] = p
		ps.list = append(ps.list, p)
	}
	if n := len(p.Offsets); n > 0 && p.next == offset {
		p.Offsets[n-1]++
	} else {
		p.Offsets = append(p.Offsets, offset, 1)
	}
	p.next = offset + 1
	if epoch < 0 {
		epoch = -1
	}
	if n := len(p.Epochs); n > 0 && p.epoch == epoch {
		p.Epochs[n-1] = p.Epochs[n-1].(int) + 1
	} else {
		var e any = epoch
		if epoch < 0 {
			e = nil
		}
		p.Epochs = append(p.Epochs, e, 1)
	}
	p.epoch = epoch
	p.Values = append(p.Values, value)
}

// List is the parts so far (an empty list, never nil: the reply's "parts" is a JSON array).
func (ps *Parts) List() []*Part {
	if ps.list == nil {
		return []*Part{}
	}
	return ps.list
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

// Role is a producer or a consumer: commands in order, sends at once.
type Role interface {
	// Send hands one send to the library; its outcome comes later (Out.Outcome).
	Send(id int64, topic string, partition int32, value string)
	// Handle answers one command: the reply's fields (Serve adds the id and ok), or its error.
	Handle(c *Command) (map[string]any, error)
}

// Replied is a Role that is told when a command's reply has been written (optional). A
// consumer whose group events are written from the library's goroutines holds a lock from
// collecting a poll's records to its reply, so a revocation falls after the records polled
// before it, never between them and their reply.
type Replied interface {
	Replied(c *Command)
}

// Serve runs a worker: it leaves when the parent is gone (WatchParent), reads command lines
// from stdin, starts the role the first line names (start; its error is the one line of a
// refused configuration, and the worker exits), hands sends to it at once (batch, sends and
// send lines: no reply) and answers every other command in order, then exits after close or at
// the end of stdin. version is the library's own version, for the ready reply.
func Serve(version string, start func(*Command, *Out) (Role, error)) {
	WatchParent()
	o := NewOut()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	var r Role
	for in.Scan() {
		raw := in.Bytes()
		if len(strings.TrimSpace(string(raw))) == 0 {
			continue
		}
		var cmd Command
		if err := json.Unmarshal(raw, &cmd); err != nil {
			Logf("unreadable line: %v", err)
			os.Exit(2)
		}
		if r == nil {
			made, err := start(&cmd, o)
			if err != nil {
				o.Line(map[string]any{"id": 0, "error": ErrorText(err)})
				os.Exit(1)
			}
			r = made
			o.Line(map[string]any{"id": 0, "ok": true, "version": version, "protocol": Version, "batches": true, "compact_oks": true})
			continue
		}
		switch cmd.Op {
		case "batch":
			_, parts, err := cmd.PartitionList()
			if err != nil || len(parts) != len(cmd.Values) {
				Logf("bad batch line: %v", err)
				os.Exit(2)
			}
			for i, v := range cmd.Values {
				r.Send(cmd.First+int64(i), cmd.Topic, parts[i], v)
			}
			continue
		case "sends":
			for _, s := range cmd.Sends {
				r.Send(int64(s[0].(float64)), s[1].(string), int32(s[2].(float64)), s[3].(string))
			}
			continue
		case "send":
			r.Send(cmd.ID, cmd.Topic, cmd.Partition, cmd.Value)
			continue
		}
		reply, err := r.Handle(&cmd)
		if err != nil {
			o.Line(map[string]any{"id": cmd.ID, "error": ErrorText(err)})
		} else {
			reply["id"] = cmd.ID
			reply["ok"] = true
			o.Line(reply)
		}
		if told, ok := r.(Replied); ok {
			told.Replied(&cmd)
		}
		if cmd.Op == "close" {
			os.Exit(0)
		}
	}
}
