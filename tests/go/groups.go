// Scenario groups: a kgo consumer group consumes, commits chosen offsets, leaves; kadm sees
// the group (ListGroups, DescribeGroups / ConsumerGroupDescribe, OffsetFetch); a new member
// resumes exactly at the committed offsets. Run twice: the classic protocol (JoinGroup /
// SyncGroup / Heartbeat, cooperative-sticky) and the KIP-848 protocol (ConsumerGroupHeartbeat,
// kgo.ServerSideBalancer with the server-side "range" assignor).
package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func runGroups(ctx context.Context, e *env) (string, error) {
	var notes []string
	var errs []string
	for _, nextGen := range []bool{false, true} {
		label := "classic"
		if nextGen {
			label = "next-gen (KIP-848)"
		}
		note, err := groupRound(ctx, e, nextGen)
		if err != nil {
			errs = append(errs, label+": "+err.Error())
			continue
		}
		notes = append(notes, label+": "+note)
	}
	if note, err := regexRound(ctx, e); err != nil {
		errs = append(errs, "next-gen regex: "+err.Error())
	} else {
		notes = append(notes, note)
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("%s; passed: %s", strings.Join(errs, "; "), strings.Join(notes, "; "))
	}
	return strings.Join(notes, "; "), nil
}

func groupRound(ctx context.Context, e *env, nextGen bool) (string, error) {
	kind := "classic"
	wantType := "classic"
	opts := []kgo.Opt{}
	if nextGen {
		kind = "nextgen"
		wantType = "consumer"
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	}
	topic := e.name("grp-" + kind)
	group := e.name("g-" + kind)
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	if err := createTopic(ctx, adm, topic, 2, nil); err != nil {
		return "", err
	}
	p, err := newClient(e, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return "", err
	}
	defer p.Close()
	var recs []*kgo.Record
	for part := int32(0); part < 2; part++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Partition: part, Key: []byte("k"), Value: []byte(fmt.Sprintf("p%d-%d", part, i))})
		}
	}
	if _, err := produceSync(ctx, p, recs...); err != nil {
		return "", err
	}

	member := func() (*kgo.Client, error) {
		return newClient(e, append([]kgo.Opt{
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(10 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
		}, opts...)...)
	}

	// First member: everything from the start, then commit 5 on p0 and 7 on p1.
	c1, err := member()
	if err != nil {
		return "", err
	}
	defer c1.Close()
	got, err := consumeN(ctx, c1, 20)
	if err != nil {
		return "", fmt.Errorf("first member: %w", err)
	}
	if len(got) != 20 {
		return "", fmt.Errorf("first member consumed %d records, want 20", len(got))
	}
	var commitErr error
	c1.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 5}, 1: {Epoch: -1, Offset: 7}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				commitErr = err
				return
			}
			for _, t := range resp.Topics {
				for _, pp := range t.Partitions {
					if pp.ErrorCode != 0 && commitErr == nil {
						commitErr = fmt.Errorf("OffsetCommit %s/%d: error code %d", t.Topic, pp.Partition, pp.ErrorCode)
					}
				}
			}
		})
	if commitErr != nil {
		return "", fmt.Errorf("commit: %w", commitErr)
	}
	memberID, _ := c1.GroupMetadata()

	// While the member is in: the group is listed with its type and described as stable.
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		return "", fmt.Errorf("ListGroups: %w", err)
	}
	l, ok := lg[group]
	if !ok {
		return "", fmt.Errorf("ListGroups does not list %s (%d groups)", group, len(lg))
	}
	// A wrong GroupType is recorded but does not stop the round, so the rest still runs.
	var soft []string
	if l.GroupType != "" && l.GroupType != wantType {
		soft = append(soft, fmt.Sprintf("ListGroups v%d: %s has GroupType %q, Kafka answers %q", lgVersion(ctx, acl), group, l.GroupType, wantType))
	}
	// The KIP-848 types filter (ListGroups v5) and the states filter (v4).
	otherType := map[string]string{"classic": "consumer", "consumer": "classic"}[wantType]
	if in, err := adm.ListGroupsByType(ctx, []string{wantType}, "Stable"); err != nil {
		return "", fmt.Errorf("ListGroups types=[%s] states=[Stable]: %w", wantType, err)
	} else if _, ok := in[group]; !ok {
		soft = append(soft, fmt.Sprintf("ListGroups types=[%s] states=[Stable] does not list %s", wantType, group))
	}
	if out, err := adm.ListGroupsByType(ctx, []string{otherType}); err != nil {
		return "", fmt.Errorf("ListGroups types=[%s]: %w", otherType, err)
	} else if _, ok := out[group]; ok {
		soft = append(soft, fmt.Sprintf("ListGroups types=[%s] lists %s", otherType, group))
	}
	if l.State != "Stable" {
		soft = append(soft, fmt.Sprintf("ListGroups: %s in state %q, want Stable", group, l.State))
	}
	if l.ProtocolType != "consumer" {
		return "", fmt.Errorf("ListGroups: %s has protocol type %q, want consumer", group, l.ProtocolType)
	}
	if nextGen {
		if err := describeNextGen(ctx, adm, group, memberID, "Stable", 1); err != nil {
			return "", err
		}
	} else if err := describeClassic(ctx, adm, group, memberID, "Stable", 1); err != nil {
		return "", err
	}

	c1.Close()
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err = pollUntil(pctx, 200*time.Millisecond, func() error {
		if nextGen {
			return describeNextGen(pctx, adm, group, "", "Empty", 0)
		}
		return describeClassic(pctx, adm, group, "", "Empty", 0)
	})
	if err != nil {
		return "", fmt.Errorf("after the member left: %w", err)
	}

	fo, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return "", fmt.Errorf("OffsetFetch: %w", err)
	}
	for part, want := range map[int32]int64{0: 5, 1: 7} {
		o, ok := fo.Lookup(topic, part)
		if !ok || o.Err != nil || o.At != want {
			return "", fmt.Errorf("OffsetFetch %s/%d: present=%v at=%d err=%v, want %d", topic, part, ok, o.At, o.Err, want)
		}
	}

	// Second member resumes from the committed offsets: 5 + 3 records, nothing more.
	c2, err := member()
	if err != nil {
		return "", err
	}
	defer c2.Close()
	got, err = consumeN(ctx, c2, 8)
	if err != nil {
		return "", fmt.Errorf("second member: %w", err)
	}
	first := map[int32]int64{}
	count := map[int32]int{}
	for _, r := range got {
		if _, seen := first[r.Partition]; !seen {
			first[r.Partition] = r.Offset
		}
		count[r.Partition]++
	}
	if first[0] != 5 || first[1] != 7 || count[0] != 5 || count[1] != 3 {
		return "", fmt.Errorf("second member started at p0=%d p1=%d with %d+%d records, want 5 and 7 with 5+3", first[0], first[1], count[0], count[1])
	}
	if extra, _ := drain(ctx, c2, 500*time.Millisecond); len(extra) > 0 {
		return "", fmt.Errorf("second member got %d records past the end", len(extra))
	}
	c2.Close()
	if len(soft) > 0 {
		return "", fmt.Errorf("%s (everything else in this round passed)", strings.Join(soft, "; "))
	}
	return fmt.Sprintf("consume 20, commit p0=5 p1=7, leave -> Empty, rejoin resumes at 5/7; ListGroups type=%q", l.GroupType), nil
}

// lgVersion is the ListGroups version kgo negotiates (for the failure note).
func lgVersion(ctx context.Context, cl *kgo.Client) int16 {
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil {
		return -1
	}
	return resp.GetVersion()
}

func describeClassic(ctx context.Context, adm *kadm.Client, group, memberID, state string, members int) error {
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("DescribeGroups: %w", err)
	}
	d, ok := dg[group]
	if !ok || d.Err != nil {
		return fmt.Errorf("DescribeGroups %s: present=%v err=%v", group, ok, d.Err)
	}
	if d.State != state || len(d.Members) != members {
		return fmt.Errorf("DescribeGroups %s: state %q with %d members, want %q with %d", group, d.State, len(d.Members), state, members)
	}
	if d.ProtocolType != "consumer" {
		return fmt.Errorf("DescribeGroups %s: protocol type %q, want consumer", group, d.ProtocolType)
	}
	if members > 0 {
		if d.Members[0].MemberID != memberID {
			return fmt.Errorf("DescribeGroups %s: member %q, want %q", group, d.Members[0].MemberID, memberID)
		}
		if d.Protocol != "cooperative-sticky" {
			return fmt.Errorf("DescribeGroups %s: protocol %q, want cooperative-sticky", group, d.Protocol)
		}
		if n := d.AssignedPartitions().Sorted(); len(n) != 1 || len(n[0].Partitions) != 2 {
			return fmt.Errorf("DescribeGroups %s: assignment %v, want both partitions of one topic", group, n)
		}
	}
	return nil
}

func describeNextGen(ctx context.Context, adm *kadm.Client, group, memberID, state string, members int) error {
	dg, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		return fmt.Errorf("ConsumerGroupDescribe: %w", err)
	}
	d, ok := dg[group]
	if !ok || d.Err != nil {
		return fmt.Errorf("ConsumerGroupDescribe %s: present=%v err=%v", group, ok, d.Err)
	}
	if d.State != state || len(d.Members) != members {
		return fmt.Errorf("ConsumerGroupDescribe %s: state %q with %d members, want %q with %d", group, d.State, len(d.Members), state, members)
	}
	if members > 0 {
		m := d.Members[0]
		if m.MemberID != memberID {
			return fmt.Errorf("ConsumerGroupDescribe %s: member %q, want %q", group, m.MemberID, memberID)
		}
		if d.AssignorName != "range" {
			return fmt.Errorf("ConsumerGroupDescribe %s: assignor %q, want range", group, d.AssignorName)
		}
		if n := m.Assignment.Sorted(); len(n) != 1 || len(n[0].Partitions) != 2 {
			return fmt.Errorf("ConsumerGroupDescribe %s: assignment %v, want both partitions of one topic", group, n)
		}
	}
	return nil
}

// regexRound: a KIP-848 member subscribed by regex (kgo.ConsumeRegex sends it to the broker
// as SubscribedTopicRegex) is assigned every matching topic, including one created after
// it joined, and none that does not match.
func regexRound(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	prefix := e.name("rx")
	a, b, other := prefix+"-a", prefix+"-b", e.name("norx")
	for _, t := range []string{a, other} {
		if err := createTopic(ctx, adm, t, 1, nil); err != nil {
			return "", err
		}
	}
	p, err := newClient(e)
	if err != nil {
		return "", err
	}
	defer p.Close()
	if _, err := produceSync(ctx, p, &kgo.Record{Topic: a, Value: []byte("a0")}, &kgo.Record{Topic: other, Value: []byte("x")}); err != nil {
		return "", err
	}
	c, err := newClient(e, kgo.ConsumerGroup(e.name("g-rx")), kgo.ConsumeRegex(), kgo.ConsumeTopics("^"+prefix+"-.*"),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.MetadataMinAge(200*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	if err != nil {
		return "", err
	}
	defer c.Close()
	got, err := consumeN(ctx, c, 1)
	if err != nil {
		return "", fmt.Errorf("before the second topic: %w", err)
	}
	if err := createTopic(ctx, adm, b, 1, nil); err != nil {
		return "", err
	}
	if _, err := produceSync(ctx, p, &kgo.Record{Topic: b, Value: []byte("b0")}); err != nil {
		return "", err
	}
	more, err := consumeN(ctx, c, 1)
	if err != nil {
		return "", fmt.Errorf("after creating %s: %w", b, err)
	}
	got = append(got, more...)
	extra, _ := drain(ctx, c, 500*time.Millisecond)
	got = append(got, extra...)
	var seen []string
	for _, r := range got {
		seen = append(seen, r.Topic+"="+string(r.Value))
	}
	if fmt.Sprint(seen) != fmt.Sprint([]string{a + "=a0", b + "=b0"}) {
		return "", fmt.Errorf("regex member read %v, want only %s=a0 then %s=b0", seen, a, b)
	}
	return "next-gen regex: topic created after the join is assigned, non-matching topic is not", nil
}
