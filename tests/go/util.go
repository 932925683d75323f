// Helpers shared by the scenarios: clients, topic creation, synchronous produce and bounded
// consumption. Every wait is bounded by the caller's context.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// newClient builds a kgo client for the bootstrap address plus extra options.
func newClient(e *env, opts ...kgo.Opt) (*kgo.Client, error) {
	base := []kgo.Opt{
		kgo.SeedBrokers(e.bootstrap),
		kgo.RequestTimeoutOverhead(5 * time.Second),
		kgo.RetryTimeout(20 * time.Second),
		kgo.FetchMaxWait(200 * time.Millisecond),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kgo.NewClient: %w", err)
	}
	return cl, nil
}

// newAdmin returns a kadm client over its own kgo client; close the kgo client when done.
func newAdmin(e *env) (*kadm.Client, *kgo.Client, error) {
	cl, err := newClient(e)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// createTopic creates a topic with replication factor 1 and checks the per-topic error.
func createTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32, configs map[string]*string) error {
	resp, err := adm.CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil {
		return fmt.Errorf("CreateTopic %s: %w", topic, err)
	}
	if resp.Err != nil {
		return fmt.Errorf("CreateTopic %s: %w (%s)", topic, resp.Err, resp.ErrMessage)
	}
	return nil
}

// produceSync produces records one request at a time (ProduceSync) and returns them with
// their assigned partition and offset.
func produceSync(ctx context.Context, cl *kgo.Client, recs ...*kgo.Record) ([]*kgo.Record, error) {
	res := cl.ProduceSync(ctx, recs...)
	out := make([]*kgo.Record, 0, len(res))
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("produce to %s: %w", r.Record.Topic, r.Err)
		}
		out = append(out, r.Record)
	}
	return out, nil
}

// consumeN polls cl until it has n records, then returns them (in poll order, which is
// offset order within a partition). It fails on any fetch error or when ctx ends first.
func consumeN(ctx context.Context, cl *kgo.Client, n int) ([]*kgo.Record, error) {
	var out []*kgo.Record
	for len(out) < n {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return out, fmt.Errorf("got %d of %d records: %w", len(out), n, ctx.Err())
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return out, ferr
		}
		out = append(out, fs.Records()...)
	}
	return out, nil
}

// drain polls for quiet more records and fails if any arrives: used after consumeN to
// check that nothing beyond the expected records is delivered.
func drain(ctx context.Context, cl *kgo.Client, quiet time.Duration) ([]*kgo.Record, error) {
	pctx, cancel := context.WithTimeout(ctx, quiet)
	defer cancel()
	var extra []*kgo.Record
	for pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		extra = append(extra, fs.Records()...)
	}
	return extra, nil
}

func strp(s string) *string { return &s }

// pollUntil calls check every interval until it returns nil or ctx ends; it returns the
// last check error on timeout.
func pollUntil(ctx context.Context, interval time.Duration, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %v)", err, ctx.Err())
		case <-time.After(interval):
		}
	}
}
