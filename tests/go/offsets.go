// Scenario offsets_for_times: ListOffsets through kadm (earliest, latest, max timestamp, and
// the first offset at or after a millisecond) on records with explicit timestamps.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func runOffsetsForTimes(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	topic := e.name("times")
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return "", err
	}
	lookup := func(what string, lo kadm.ListedOffsets, err error) (kadm.ListedOffset, error) {
		if err != nil {
			return kadm.ListedOffset{}, fmt.Errorf("%s: %w", what, err)
		}
		o, ok := lo.Lookup(topic, 0)
		if !ok || o.Err != nil {
			return o, fmt.Errorf("%s: present=%v err=%v", what, ok, o.Err)
		}
		return o, nil
	}

	// Empty topic: earliest = latest = 0; a timestamp lookup finds nothing, which kadm
	// reports as the end offset.
	lo, err := adm.ListStartOffsets(ctx, topic)
	o, err := lookup("earliest (empty)", lo, err)
	if err != nil {
		return "", err
	}
	if o.Offset != 0 {
		return "", fmt.Errorf("earliest of an empty topic = %d, want 0", o.Offset)
	}

	p, err := newClient(e, kgo.DefaultProduceTopic(topic))
	if err != nil {
		return "", err
	}
	defer p.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	ms := base.UnixMilli()
	// Timestamps out of order on purpose: t0, t0+2s, t0+1s, t0+3s.
	steps := []int64{0, 2000, 1000, 3000}
	for i, s := range steps {
		r := &kgo.Record{Key: []byte("k"), Value: []byte(fmt.Sprint(i)), Timestamp: base.Add(time.Duration(s) * time.Millisecond)}
		if _, err := produceSync(ctx, p, r); err != nil {
			return "", err
		}
	}

	lo, err = adm.ListStartOffsets(ctx, topic)
	if o, err = lookup("earliest", lo, err); err != nil {
		return "", err
	} else if o.Offset != 0 {
		return "", fmt.Errorf("earliest = %d, want 0", o.Offset)
	}
	lo, err = adm.ListEndOffsets(ctx, topic)
	if o, err = lookup("latest", lo, err); err != nil {
		return "", err
	} else if o.Offset != 4 {
		return "", fmt.Errorf("latest = %d, want 4", o.Offset)
	}
	lo, err = adm.ListMaxTimestampOffsets(ctx, topic)
	if o, err = lookup("max timestamp", lo, err); err != nil {
		return "", err
	} else if o.Offset != 3 || o.Timestamp != ms+3000 {
		return "", fmt.Errorf("max timestamp: offset %d ts %d, want 3 and %d", o.Offset, o.Timestamp, ms+3000)
	}

	// ListOffsets by timestamp: the first offset whose timestamp is >= the target.
	cases := []struct {
		at     int64
		offset int64
		ts     int64
	}{
		{ms - 5000, 0, ms},
		{ms, 0, ms},
		{ms + 1, 1, ms + 2000},
		{ms + 1000, 1, ms + 2000},
		{ms + 2001, 3, ms + 3000},
	}
	for _, c := range cases {
		lo, err := adm.ListOffsetsAfterMilli(ctx, c.at, topic)
		o, err := lookup(fmt.Sprintf("after %d", c.at-ms), lo, err)
		if err != nil {
			return "", err
		}
		if o.Offset != c.offset || o.Timestamp != c.ts {
			return "", fmt.Errorf("ListOffsets at base%+dms: offset %d ts %+d, want offset %d ts %+d", c.at-ms, o.Offset, o.Timestamp-ms, c.offset, c.ts-ms)
		}
	}
	// After the newest timestamp: the broker answers -1 and kadm reports the end offset.
	lo, err = adm.ListOffsetsAfterMilli(ctx, ms+3001, topic)
	if o, err = lookup("after the last", lo, err); err != nil {
		return "", err
	} else if o.Offset != 4 {
		return "", fmt.Errorf("ListOffsets after the newest timestamp: offset %d, want 4 (end)", o.Offset)
	}
	return "earliest/latest on empty and filled partition, max timestamp (-3), by timestamp on out-of-order timestamps incl. before first and after last", nil
}
