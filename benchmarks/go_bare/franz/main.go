// franz-go (github.com/twmb/franz-go) alone, for benchmarks/client_throughput.py's bare rows:
// the settings highwater's franz-go worker gives the library for the benchmark's producer and
// consumer, no worker protocol, no history. client_throughput.py's go_bare builds it once per
// franz-go version in the cache, as the worker is built (a copy of this module, `go mod edit
// -require`, `go mod tidy`, `go build`); its go.mod names the worker's default version. One JSON
// argument, one JSON line out, on failure one line on stderr and exit status 1: the argument, the
// line, the clock of the timed part and main are ../bench's (highwater/bench), shared by the bare
// programs.
//
//	produce: {"mode": "produce", "bootstrap": [...], "topic": t, "records": n, "size": b, "partitions": p}
//	  records go to the partitions in turn, values "v<i>:" padded with '.' to b bytes; timed from
//	  the first send until every send's promise was called, an error if any send failed.
//	consume: {"mode": "consume", "bootstrap": [...], "topic": t, "records": n, "partitions": p}
//	  every partition assigned at its log start (ListOffsets) and handed to the client before the
//	  clock starts, as the worker's assign and seek_to_beginning do before the harness's first
//	  poll; timed until n records with values were polled, 500 at most a poll, 500 ms each.
//
// The settings are the worker's (clients/go/franz/main.go: common, producerOpts, consumer.opts)
// for what the benchmark asks (client_throughput.py's bench_producer_settings and the default
// ConsumerSettings): producer acks=all, idempotence off, no compression, the manual partitioner,
// 3 record retries, linger 2 ms, produce request timeout 5 s, delivery timeout 20 s, one request
// in flight per broker; consumer reset to the start, fetch wait 500 ms, metadata max age 5 s.
// Left out, as highwater's own work: the worker's hooks (the broker that served each record),
// its logger (the library logs nothing here, so stderr holds only the error line).
package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"highwater/bench"
)

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func produce(a bench.Args) (bench.Result, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(a.Bootstrap...),
		kgo.ClientID("bare-"+a.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(3),
		kgo.ProducerLinger(ms(2)),
		kgo.ProduceRequestTimeout(ms(5000)),
		kgo.RecordDeliveryTimeout(ms(20000)),
		kgo.MaxProduceRequestsInflightPerBroker(1),
	)
	if err != nil {
		return bench.Result{}, err
	}
	defer cl.Close()
	values := make([][]byte, a.Records)
	for i := range values {
		v := fmt.Sprintf("v%d:", i)
		if len(v) < a.Size {
			v += strings.Repeat(".", a.Size-len(v))
		}
		values[i] = []byte(v)
	}
	var (
		mu       sync.Mutex
		failed   int
		first    error // the first failed send's
		outcomes sync.WaitGroup
	)
	outcomes.Add(a.Records)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if failed++; first == nil {
				first = err
			}
			mu.Unlock()
		}
		outcomes.Done()
	}
	ctx := context.Background()
	c := bench.StartClock()
	for i, v := range values {
		cl.Produce(ctx, &kgo.Record{Topic: a.Topic, Partition: int32(i) % a.Partitions, Value: v}, promise)
	}
	done := make(chan struct{})
	go func() {
		outcomes.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		return bench.Result{}, fmt.Errorf("sends still without an outcome 60 s after the last send")
	}
	r := c.End(a.Records)
	if failed > 0 {
		return bench.Result{}, fmt.Errorf("%d of %d sends failed, the first: %v", failed, a.Records, first)
	}
	return r, nil
}

// logStarts asks the partitions' leaders for their log start offsets (ListOffsets, timestamp
// -2), as the worker's seek_to_beginning does.
func logStarts(cl *kgo.Client, topic string, partitions int32) (map[int32]kgo.Offset, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, -1, -2
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("ListOffsets: %w", err)
	}
	starts := map[int32]kgo.Offset{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("ListOffsets %s-%d: %w", topic, rp.Partition, err)
			}
			starts[rp.Partition] = kgo.NewOffset().At(rp.Offset)
		}
	}
	if int32(len(starts)) != partitions {
		return nil, fmt.Errorf("ListOffsets answered %d of %d partitions of %s", len(starts), partitions, topic)
	}
	return starts, nil
}

func consume(a bench.Args) (bench.Result, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(a.Bootstrap...),
		kgo.ClientID("bare-"+a.Topic),
		kgo.MetadataMaxAge(ms(5000)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(ms(500)),
	)
	if err != nil {
		return bench.Result{}, err
	}
	defer cl.Close()
	starts, err := logStarts(cl, a.Topic, a.Partitions)
	if err != nil {
		return bench.Result{}, err
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{a.Topic: starts})
	c := bench.StartClock()
	deadline := time.Now().Add(120 * time.Second)
	got := 0
	var last error // the last fetch error, for the timeout's message
	for got < a.Records {
		if time.Now().After(deadline) {
			return bench.Result{}, fmt.Errorf("read %d of %d records within 120 s (last fetch error: %v)", got, a.Records, last)
		}
		ctx, cancel := context.WithTimeout(context.Background(), ms(500))
		fetches := cl.PollRecords(ctx, 500)
		cancel()
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				last = err
			}
		})
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Value != nil {
				got++
			}
		})
	}
	return c.End(got), nil
}

func main() { bench.Main("franz-go", produce, consume) }
