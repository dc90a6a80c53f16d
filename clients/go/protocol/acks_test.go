package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var (
	p0 = TopicPartition{"t", 0}
	p1 = TopicPartition{"t", 1}
	// a broker's refusal, as franz-go's kerr errors read
	refused = errors.New("INVALID_RECORD_STATE: The record state is invalid.")
	lost    = errors.New("NOT_LEADER_FOR_PARTITION: This server is not the leader for that topic-partition.")
)

func book() *AckBook { return &AckBook{Library: "lib"} }

func unknown(err error) bool {
	var c Classed
	return errors.As(err, &c) && c.ErrorClass() == ErrAckOutcomeUnknown
}

func TestOneResultIsTheOutcomeOfEveryOffsetMarked(t *testing.T) {
	b := book()
	b.Mark(p0, 3, 1)
	b.Mark(p0, 2)
	b.Mark(p1, 7)
	b.Result(p0, nil)
	b.Result(p1, refused)
	got := b.Settle()
	want := []Acked{{"t", 0, []int64{1, 2, 3}, nil}, {"t", 1, []int64{7}, refused}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if b.Pending() || len(b.Settle()) != 0 {
		t.Fatal("a settled window left marks behind")
	}
}

func TestPartsThatAgreeAreExact(t *testing.T) {
	b := book()
	b.Mark(p0, 1, 2)
	b.Mark(p1, 5)
	b.Result(p0, nil)
	b.Result(p0, nil)
	b.Result(p1, refused)
	b.Result(p1, errors.New(refused.Error())) // the same error, another value
	got := b.Settle()
	if got[0].Error != nil || got[1].Error != refused {
		t.Fatalf("agreeing parts were not kept exact: %+v", got)
	}
}

// The anomaly: the library sent one partition's marks in two requests, one applied and one
// refused, and said neither's offsets. No offset's outcome is known.
func TestPartsThatDisagreeAreUnknownNotGuessed(t *testing.T) {
	b := book()
	b.Mark(p0, 1, 2, 3)
	b.Result(p0, nil)
	b.Result(p0, refused)
	got := b.Settle()
	if len(got) != 1 || !reflect.DeepEqual(got[0].Offsets, []int64{1, 2, 3}) || !unknown(got[0].Error) {
		t.Fatalf("disagreeing parts were not reported unknown: %+v", got)
	}
	text := ErrorText(got[0].Error)
	if !strings.HasPrefix(text, "AckOutcomeUnknown: lib reported these acknowledgements in 2 parts that disagree (ok; Error: INVALID_RECORD_STATE") {
		t.Fatalf("unclear text: %s", text)
	}
	b.Mark(p0, 4)
	b.Result(p0, refused)
	b.Result(p0, lost)
	if got := b.Settle(); !unknown(got[0].Error) {
		t.Fatalf("two different refusals were not reported unknown: %+v", got)
	}
}

func TestAMarkWithoutAResultIsUnknown(t *testing.T) {
	b := book()
	b.Mark(p0, 9)
	if !b.Pending() {
		t.Fatal("a mark is not pending")
	}
	got := b.Settle()
	if len(got) != 1 || !unknown(got[0].Error) || !strings.Contains(got[0].Error.Error(), "lib reported no outcome") {
		t.Fatalf("a mark with no result was not reported unknown: %+v", got)
	}
}

// A result for a partition the worker marked nothing of in the window covers none of its
// offsets: no event, and it does not count in the next window.
func TestAResultWithoutMarksIsDropped(t *testing.T) {
	b := book()
	b.Result(p1, refused)
	if got := b.Settle(); len(got) != 0 {
		t.Fatalf("a result without marks made events: %+v", got)
	}
	b.Mark(p1, 2)
	b.Result(p1, nil)
	if got := b.Settle(); got[0].Error != nil {
		t.Fatalf("a dropped result leaked into the next window: %+v", got)
	}
}

func TestTheEventLine(t *testing.T) {
	ok := Acked{"t", 0, []int64{1}, nil}.Event()
	if ok["error"] != nil || ok["event"] != "acked" || ok["topic"] != "t" {
		t.Fatalf("ok event: %v", ok)
	}
	bad := Acked{"t", 0, []int64{1}, refused}.Event()
	if bad["error"] != "Error: INVALID_RECORD_STATE: The record state is invalid." {
		t.Fatalf("refused event: %v", bad)
	}
}
