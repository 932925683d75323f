// Scenario share_groups (KIP-932) with kgo.ShareGroup: two share consumers of one group read
// every record once (a record is acknowledged AckAccept when the next poll starts), then a
// single consumer releases one record (AckRelease: it comes back with DeliveryCount 2) and
// rejects another (AckReject: never again); kadm.DescribeShareGroups shows the group.
// The group starts at the earliest offset through its share.auto.offset.reset group config
// (IncrementalAlterConfigs on the GROUP resource). A broker that does not advertise
// ShareGroupHeartbeat (API 76) fails the scenario.
package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func runShareGroups(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		return "", fmt.Errorf("ApiVersions: %w", err)
	}
	served := false
	vs.Each(func(v kadm.BrokerApiVersions) {
		if _, _, ok := v.KeyVersions(int16(kmsg.ShareGroupHeartbeat)); ok {
			served = true
		}
	})
	if !served {
		return "", fmt.Errorf("the broker does not advertise ShareGroupHeartbeat (API 76)")
	}

	topic, group := e.name("share"), e.name("share-g")
	if err := createTopic(ctx, adm, topic, 2, nil); err != nil {
		return "", err
	}
	if err := shareEarliest(ctx, acl, group); err != nil {
		return "", err
	}
	const n = 60
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	pcl, err := newClient(e, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return "", err
	}
	_, err = produceSync(ctx, pcl, recs...)
	pcl.Close()
	if err != nil {
		return "", err
	}

	// Two members: every record once.
	a, err := newClient(e, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		return "", err
	}
	defer a.Close()
	b, err := newClient(e, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		return "", err
	}
	defer b.Close()
	seen := map[string]int{}
	per := [2]int{}
	poll := func(i int, cl *kgo.Client, d time.Duration) {
		pctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			per[i]++
		})
	}
	for len(seen) < n && ctx.Err() == nil {
		poll(0, a, 300*time.Millisecond)
		poll(1, b, 300*time.Millisecond)
	}
	if len(seen) < n {
		return "", fmt.Errorf("two share consumers got %d of %d distinct records", len(seen), n)
	}
	for i := 0; i < 5; i++ { // the next polls accept the last batches; nothing comes twice
		poll(0, a, 300*time.Millisecond)
		poll(1, b, 300*time.Millisecond)
	}
	for v, c := range seen {
		if c != 1 {
			return "", fmt.Errorf("record %s delivered %d times", v, c)
		}
	}
	if err := a.FlushAcks(ctx); err != nil {
		return "", fmt.Errorf("FlushAcks: %w", err)
	}
	if err := b.FlushAcks(ctx); err != nil {
		return "", fmt.Errorf("FlushAcks: %w", err)
	}
	described, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return "", fmt.Errorf("DescribeShareGroups: %w", err)
	}
	d, ok := described[group]
	if !ok || d.Err != nil || len(d.Members) != 2 || d.GroupState != "Stable" {
		return "", fmt.Errorf("DescribeShareGroups %s: %+v", group, d)
	}
	a.Close()
	b.Close()

	// RELEASE and REJECT on a new topic and group.
	topic2, group2 := e.name("share-ack"), e.name("share-ack-g")
	if err := createTopic(ctx, adm, topic2, 1, nil); err != nil {
		return "", err
	}
	if err := shareEarliest(ctx, acl, group2); err != nil {
		return "", err
	}
	pcl, err = newClient(e)
	if err != nil {
		return "", err
	}
	_, err = produceSync(ctx, pcl, &kgo.Record{Topic: topic2, Value: []byte("keep")},
		&kgo.Record{Topic: topic2, Value: []byte("again")}, &kgo.Record{Topic: topic2, Value: []byte("bad")})
	pcl.Close()
	if err != nil {
		return "", err
	}
	c, err := newClient(e, kgo.ShareGroup(group2), kgo.ConsumeTopics(topic2))
	if err != nil {
		return "", err
	}
	defer c.Close()
	var got []string
	for len(got) < 3 && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := c.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			got = append(got, fmt.Sprintf("%s/%d", v, r.DeliveryCount()))
			switch v {
			case "again":
				r.Ack(kgo.AckRelease)
			case "bad":
				r.Ack(kgo.AckReject)
			default:
				r.Ack(kgo.AckAccept)
			}
		})
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[again/1 bad/1 keep/1]" {
		return "", fmt.Errorf("first deliveries: %v", got)
	}
	if err := c.FlushAcks(ctx); err != nil {
		return "", fmt.Errorf("FlushAcks: %w", err)
	}
	var again []string
	deadline := time.Now().Add(30 * time.Second)
	quietUntil := time.Time{}
	for time.Now().Before(deadline) && (quietUntil.IsZero() || time.Now().Before(quietUntil)) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := c.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			again = append(again, fmt.Sprintf("%s/%d", r.Value, r.DeliveryCount()))
			r.Ack(kgo.AckAccept)
		})
		if len(again) > 0 && quietUntil.IsZero() {
			quietUntil = time.Now().Add(3 * time.Second)
		}
	}
	if fmt.Sprint(again) != "[again/2]" {
		return "", fmt.Errorf("after RELEASE/REJECT: want [again/2], got %v", again)
	}
	if err := c.FlushAcks(ctx); err != nil {
		return "", fmt.Errorf("FlushAcks: %w", err)
	}
	return fmt.Sprintf("2 members read %d records once (%d/%d); AckRelease redelivered with DeliveryCount 2, AckReject archived; DescribeShareGroups Stable with 2 members",
		n, per[0], per[1]), nil
}

// shareEarliest sets the share group's share.auto.offset.reset=earliest and waits until
// DescribeConfigs shows it (Kafka applies it through its metadata log).
func shareEarliest(ctx context.Context, cl *kgo.Client, group string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name = "share.auto.offset.reset"
	cfg.Op = kmsg.IncrementalAlterConfigOpSet
	cfg.Value = strp("earliest")
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs group %s: %w", group, err)
	}
	if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
		return fmt.Errorf("IncrementalAlterConfigs group %s: %+v", group, resp.Resources)
	}
	return pollUntil(ctx, 200*time.Millisecond, func() error {
		dreq := kmsg.NewPtrDescribeConfigsRequest()
		dres := kmsg.NewDescribeConfigsRequestResource()
		dres.ResourceType = kmsg.ConfigResourceTypeGroupConfig
		dres.ResourceName = group
		dreq.Resources = append(dreq.Resources, dres)
		dresp, err := dreq.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, r := range dresp.Resources {
			for _, c := range r.Configs {
				if c.Name == "share.auto.offset.reset" && c.Value != nil && *c.Value == "earliest" {
					return nil
				}
			}
		}
		return fmt.Errorf("share.auto.offset.reset=earliest not visible on group %s yet", group)
	})
}
