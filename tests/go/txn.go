// Scenario transactions: a kgo transactional producer commits, aborts and commits again; a
// read_committed consumer sees only the committed records, a read_uncommitted one sees all
// data records (kgo hides the control records). Then a GroupTransactSession runs
// consume-transform-produce (AddOffsetsToTxn + TxnOffsetCommit) and the output and the
// group's committed offset are checked.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func runTransactions(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	topic := e.name("txn")
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return "", err
	}
	p, err := newClient(e, kgo.DefaultProduceTopic(topic), kgo.TransactionalID(e.name("txid")),
		kgo.TransactionTimeout(30*time.Second))
	if err != nil {
		return "", err
	}
	defer p.Close()
	txn := func(prefix string, n int, commit kgo.TransactionEndTry) error {
		if err := p.BeginTransaction(); err != nil {
			return fmt.Errorf("BeginTransaction: %w", err)
		}
		for i := 0; i < n; i++ {
			if _, err := produceSync(ctx, p, &kgo.Record{Key: []byte(prefix), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}); err != nil {
				return err
			}
		}
		if err := p.EndTransaction(ctx, commit); err != nil {
			return fmt.Errorf("EndTransaction(%v) after %s: %w", commit, prefix, err)
		}
		return nil
	}
	if err := txn("c1", 3, kgo.TryCommit); err != nil {
		return "", err
	}
	if err := txn("a1", 4, kgo.TryAbort); err != nil {
		return "", err
	}
	if err := txn("c2", 2, kgo.TryCommit); err != nil {
		return "", err
	}
	wantCommitted := []string{"c1-0", "c1-1", "c1-2", "c2-0", "c2-1"}

	read := func(level kgo.IsolationLevel, n int) ([]string, error) {
		c, err := newClient(e, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(level))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		recs, err := consumeN(ctx, c, n)
		if err != nil {
			return nil, err
		}
		extra, _ := drain(ctx, c, 700*time.Millisecond)
		var vs []string
		for _, r := range append(recs, extra...) {
			vs = append(vs, string(r.Value))
		}
		return vs, nil
	}
	got, err := read(kgo.ReadCommitted(), len(wantCommitted))
	if err != nil {
		return "", fmt.Errorf("read_committed: %w", err)
	}
	if fmt.Sprint(got) != fmt.Sprint(wantCommitted) {
		return "", fmt.Errorf("read_committed consumer got %v, want %v", got, wantCommitted)
	}
	all, err := read(kgo.ReadUncommitted(), 9)
	if err != nil {
		return "", fmt.Errorf("read_uncommitted: %w", err)
	}
	wantAll := []string{"c1-0", "c1-1", "c1-2", "a1-0", "a1-1", "a1-2", "a1-3", "c2-0", "c2-1"}
	if fmt.Sprint(all) != fmt.Sprint(wantAll) {
		return "", fmt.Errorf("read_uncommitted consumer got %v, want %v", all, wantAll)
	}
	// The end offset counts the three commit/abort markers as well: 9 data + 3 markers.
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("ListEndOffsets: %w", err)
	}
	if o, _ := lo.Lookup(topic, 0); o.Offset != 12 {
		return "", fmt.Errorf("end offset after 3 transactions of 9 records = %d, want 12", o.Offset)
	}

	note, err := groupTransact(ctx, e, topic)
	if err != nil {
		return "", fmt.Errorf("GroupTransactSession: %w", err)
	}
	return "commit/abort/commit: read_committed sees 5 committed, read_uncommitted 9, end offset 12 (markers); " + note, nil
}

// groupTransact consumes the committed records of in through a GroupTransactSession and
// writes them upper-cased to a new topic in one transaction with the group's offsets.
func groupTransact(ctx context.Context, e *env, in string) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	out := e.name("txn-out")
	if err := createTopic(ctx, adm, out, 1, nil); err != nil {
		return "", err
	}
	group := e.name("txn-group")
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(e.bootstrap), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.TransactionalID(e.name("txid-gts")), kgo.TransactionTimeout(30*time.Second),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(in), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic(out),
		kgo.SessionTimeout(10*time.Second),
	)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var seen int
	for seen < 5 {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		fs := s.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return "", fmt.Errorf("consumed %d of 5: %w", seen, ctx.Err())
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := s.Begin(); err != nil {
			return "", fmt.Errorf("Begin: %w", err)
		}
		for _, r := range recs {
			if _, err := produceSync(ctx, s.Client(), &kgo.Record{Key: r.Key, Value: append([]byte("T:"), r.Value...)}); err != nil {
				return "", err
			}
		}
		committed, err := s.End(ctx, kgo.TryCommit)
		if err != nil {
			return "", fmt.Errorf("End: %w", err)
		}
		if !committed {
			return "", fmt.Errorf("End did not commit (a rebalance aborted it) after %d records", seen+len(recs))
		}
		seen += len(recs)
	}
	// EndTxn returns before the commit markers are written (Kafka writes them
	// asynchronously), so the transactional offset commit may become visible a little later.
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err = pollUntil(pctx, 200*time.Millisecond, func() error {
		fo, err := adm.FetchOffsets(pctx, group)
		if err != nil {
			return fmt.Errorf("OffsetFetch: %w", err)
		}
		// The committed offset is past the last data record (c2-1 at offset 10).
		if o, ok := fo.Lookup(in, 0); !ok || o.Err != nil || o.At < 11 {
			return fmt.Errorf("group offset for %s/0: present=%v at=%d err=%v, want >= 11", in, ok, o.At, o.Err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	c, err := newClient(e, kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return "", err
	}
	defer c.Close()
	recs, err := consumeN(ctx, c, 5)
	if err != nil {
		return "", fmt.Errorf("reading the output: %w", err)
	}
	var vs []string
	for _, r := range recs {
		vs = append(vs, string(r.Value))
	}
	want := "[T:c1-0 T:c1-1 T:c1-2 T:c2-0 T:c2-1]"
	if fmt.Sprint(vs) != want {
		return "", fmt.Errorf("output %v, want %s", vs, want)
	}
	return "GroupTransactSession consume-transform-produce committed 5 records + group offset", nil
}
