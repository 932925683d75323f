// Scenario special: franz-go's strict protocol handling.
//
//   - Connection start: kgo first sends ApiVersions v5 and downgrades on UNSUPPORTED_VERSION
//     (KIP-511: to the version the broker names, or to the key table it returned). A debug
//     logger records which ApiVersions versions kgo sent.
//   - Every advertised key must have min <= max; kversion guesses which Kafka release the
//     broker looks like.
//   - A default kgo client (max versions = kversion.Stable()) must negotiate
//     min(franz-go max, broker max) for each request, and the answer must decode.
//   - A handful of APIs are sent at every version the broker advertises (pinned with
//     kgo.MaxVersions) and each answer must decode and carry no error.
package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// apiLog records the ApiVersions versions kgo issues during connection setup.
type apiLog struct {
	mu   sync.Mutex
	sent []string
}

func (l *apiLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (l *apiLog) Log(_ kgo.LogLevel, msg string, kv ...any) {
	if !strings.Contains(msg, "api versions") && !strings.Contains(msg, "ApiVersions") {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "version" {
			l.sent = append(l.sent, fmt.Sprint(kv[i+1]))
		}
	}
	if strings.Contains(msg, "downgrading") {
		l.sent = append(l.sent, "downgrade")
	}
}

// probe builds a request for one API and checks its answer.
type probe struct {
	key   int16
	build func(v int16) kmsg.Request
	check func(resp kmsg.Response) error
}

func runSpecial(ctx context.Context, e *env) (string, error) {
	adm, acl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer acl.Close()
	topic, group := e.name("special"), e.name("special-g")
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return "", err
	}
	p, err := newClient(e, kgo.DefaultProduceTopic(topic))
	if err != nil {
		return "", err
	}
	defer p.Close()
	if _, err := produceSync(ctx, p, &kgo.Record{Key: []byte("k"), Value: []byte("v")}); err != nil {
		return "", err
	}
	oc, err := adm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 0, LeaderEpoch: -1}))
	if err != nil || oc.Error() != nil {
		return "", fmt.Errorf("OffsetCommit for %s: %v %v", group, err, oc.Error())
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || td[topic].Err != nil {
		return "", fmt.Errorf("Metadata: %v %v", err, td[topic].Err)
	}
	topicID := td[topic].ID

	// 1. ApiVersions handshake as kgo does it, seen through its debug log.
	lg := &apiLog{}
	hc, err := newClient(e, kgo.WithLogger(lg))
	if err != nil {
		return "", err
	}
	if err := hc.Ping(ctx); err != nil {
		hc.Close()
		return "", fmt.Errorf("Ping: %w", err)
	}
	hc.Close()
	lg.mu.Lock()
	handshake := strings.Join(lg.sent, ">")
	lg.mu.Unlock()

	// 2. The advertised table.
	avs, err := adm.ApiVersions(ctx)
	if err != nil {
		return "", fmt.Errorf("ApiVersions: %w", err)
	}
	var bv kadm.BrokerApiVersions
	for _, v := range avs {
		if v.Err != nil {
			return "", fmt.Errorf("ApiVersions from node %d: %w", v.NodeID, v.Err)
		}
		bv = v
	}
	var problems []string
	nkeys, unknown := 0, []string{}
	bv.EachKeySorted(func(key, min, max int16) {
		nkeys++
		if min < 0 || min > max {
			problems = append(problems, fmt.Sprintf("%s(%d) advertised %d-%d", kmsg.NameForKey(key), key, min, max))
		}
		if kmsg.RequestForKey(key) == nil {
			unknown = append(unknown, fmt.Sprint(key))
		}
	})
	guess := bv.VersionGuess()
	if _, avMax, _ := bv.KeyVersions(18); avMax < 5 && handshake == "5" {
		handshake += " (broker max v" + fmt.Sprint(avMax) + "; kgo used the key table in the UNSUPPORTED_VERSION answer without a second request)"
	}

	probes := specialProbes(topic, group, topicID)

	// 3. Default client: negotiated version = min(kversion.Stable(), broker max).
	stable := kversion.Stable()
	dc, err := newClient(e)
	if err != nil {
		return "", err
	}
	defer dc.Close()
	var negotiated []string
	for _, pr := range probes {
		bmin, bmax, ok := bv.KeyVersions(pr.key)
		if !ok {
			negotiated = append(negotiated, kmsg.NameForKey(pr.key)+"=not advertised")
			continue
		}
		want := bmax
		if sm, ok := stable.LookupMaxKeyVersion(pr.key); ok && sm < want {
			want = sm
		}
		if want < bmin {
			problems = append(problems, fmt.Sprintf("%s: franz-go max below broker min %d", kmsg.NameForKey(pr.key), bmin))
			continue
		}
		req := pr.build(-1)
		resp, err := dc.Request(ctx, req)
		if err == nil {
			err = pr.check(resp)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s default: %v", kmsg.NameForKey(pr.key), err))
			continue
		}
		// kgo shards some requests (a copy per broker), so the version is read off the
		// response, which kgo decodes at the version it sent.
		if resp.GetVersion() != want {
			problems = append(problems, fmt.Sprintf("%s negotiated v%d, want v%d", kmsg.NameForKey(pr.key), resp.GetVersion(), want))
		}
		negotiated = append(negotiated, fmt.Sprintf("%s=v%d", kmsg.NameForKey(pr.key), resp.GetVersion()))
	}

	// 4. Every advertised version (up to what franz-go knows) of each probe.
	sent := 0
	for _, pr := range probes {
		bmin, bmax, ok := bv.KeyVersions(pr.key)
		if !ok {
			continue
		}
		if km := kmsg.RequestForKey(pr.key).MaxVersion(); km < bmax {
			bmax = km
		}
		for v := bmin; v <= bmax; v++ {
			if err := pinnedRequest(ctx, e, pr, v); err != nil {
				problems = append(problems, fmt.Sprintf("%s v%d: %v", kmsg.NameForKey(pr.key), v, err))
			}
			sent++
		}
	}

	// 5. Records through every advertised Produce version, read back through every Fetch
	// version (kgo's producer and consumer, each pinned with MaxVersions).
	rv, err := recordsEveryVersion(ctx, e, adm, bv)
	if err != nil {
		problems = append(problems, err.Error())
	}

	if len(problems) > 0 {
		return "", fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	u := ""
	if len(unknown) > 0 {
		u = "; keys unknown to kmsg: " + strings.Join(unknown, ",")
	}
	return fmt.Sprintf("ApiVersions handshake sent %s; %d keys advertised, kversion guess %q%s; default client negotiated %s; %d pinned requests at every advertised version of %d APIs decoded without error; %s",
		handshake, nkeys, guess, u, strings.Join(negotiated, " "), sent, len(probes), rv), nil
}

// pinnedRequest sends pr at exactly version v on a client whose max for that key is v.
func pinnedRequest(ctx context.Context, e *env, pr probe, v int16) error {
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(pr.key, v)
	cl, err := newClient(e, kgo.MaxVersions(vs))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := pr.build(v)
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return err
	}
	if resp.GetVersion() != v {
		return fmt.Errorf("kgo sent v%d", resp.GetVersion())
	}
	return pr.check(resp)
}

func codeErr(what string, code int16) error {
	if err := kerr.ErrorForCode(code); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func specialProbes(topic, group string, topicID [16]byte) []probe {
	return []probe{
		{key: 18, build: func(int16) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.ClientSoftwareName, r.ClientSoftwareVersion = "skiff-franz-matrix", "1.0"
			return r
		}, check: func(resp kmsg.Response) error {
			r := resp.(*kmsg.ApiVersionsResponse)
			if len(r.ApiKeys) == 0 {
				return fmt.Errorf("no api keys")
			}
			return codeErr("ApiVersions", r.ErrorCode)
		}},
		{key: 3, build: func(int16) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(topic)
			r.Topics = append(r.Topics, t)
			return r
		}, check: func(resp kmsg.Response) error {
			r := resp.(*kmsg.MetadataResponse)
			if len(r.Brokers) != 1 || len(r.Topics) != 1 {
				return fmt.Errorf("%d brokers %d topics, want 1 and 1", len(r.Brokers), len(r.Topics))
			}
			if len(r.Topics[0].Partitions) != 1 {
				return fmt.Errorf("%d partitions, want 1", len(r.Topics[0].Partitions))
			}
			return codeErr("topic", r.Topics[0].ErrorCode)
		}},
		{key: 2, build: func(int16) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = topic
			pp := kmsg.NewListOffsetsRequestTopicPartition()
			pp.Partition, pp.Timestamp, pp.MaxNumOffsets = 0, -1, 1
			t.Partitions = append(t.Partitions, pp)
			r.Topics = append(r.Topics, t)
			return r
		}, check: func(resp kmsg.Response) error {
			r := resp.(*kmsg.ListOffsetsResponse)
			if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				return fmt.Errorf("unexpected shape")
			}
			pp := r.Topics[0].Partitions[0]
			if err := codeErr("partition", pp.ErrorCode); err != nil {
				return err
			}
			if r.Version == 0 {
				if len(pp.OldStyleOffsets) == 0 || pp.OldStyleOffsets[0] != 1 {
					return fmt.Errorf("v0 offsets %v, want [1 ...]", pp.OldStyleOffsets)
				}
			} else if pp.Offset != 1 {
				return fmt.Errorf("latest offset %d, want 1", pp.Offset)
			}
			return nil
		}},
		{key: 10, build: func(int16) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey = group
			r.CoordinatorKeys = []string{group}
			return r
		}, check: func(resp kmsg.Response) error {
			r := resp.(*kmsg.FindCoordinatorResponse)
			if r.Version >= 4 {
				if len(r.Coordinators) != 1 {
					return fmt.Errorf("%d coordinators, want 1", len(r.Coordinators))
				}
				return codeErr("coordinator", r.Coordinators[0].ErrorCode)
			}
			if r.Port <= 0 {
				return fmt.Errorf("port %d", r.Port)
			}
			return codeErr("FindCoordinator", r.ErrorCode)
		}},
		{key: 16, build: func(int16) kmsg.Request { return kmsg.NewPtrListGroupsRequest() },
			check: func(resp kmsg.Response) error {
				r := resp.(*kmsg.ListGroupsResponse)
				for _, g := range r.Groups {
					if g.Group == group {
						return codeErr("ListGroups", r.ErrorCode)
					}
				}
				return fmt.Errorf("group %s not listed among %d", group, len(r.Groups))
			}},
		{key: 15, build: func(int16) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{group}
			return r
		}, check: func(resp kmsg.Response) error {
			r := resp.(*kmsg.DescribeGroupsResponse)
			if len(r.Groups) != 1 {
				return fmt.Errorf("%d groups", len(r.Groups))
			}
			if r.Groups[0].State != "Empty" {
				return fmt.Errorf("state %q, want Empty", r.Groups[0].State)
			}
			return codeErr("group", r.Groups[0].ErrorCode)
		}},
		{key: 9, build: func(int16) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Group = group
			t := kmsg.NewOffsetFetchRequestTopic()
			t.Topic, t.Partitions = topic, []int32{0}
			r.Topics = append(r.Topics, t)
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = group
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.TopicID, gt.Partitions = topic, topicID, []int32{0}
			g.Topics = append(g.Topics, gt)
			r.Groups = append(r.Groups, g)
			return r
		}, check: func(resp kmsg.Response) error {
			r := resp.(*kmsg.OffsetFetchResponse)
			var offsets []int64
			if r.Version >= 8 {
				if len(r.Groups) != 1 {
					return fmt.Errorf("%d groups", len(r.Groups))
				}
				if err := codeErr("group", r.Groups[0].ErrorCode); err != nil {
					return err
				}
				for _, t := range r.Groups[0].Topics {
					for _, pp := range t.Partitions {
						if err := codeErr("partition", pp.ErrorCode); err != nil {
							return err
						}
						offsets = append(offsets, pp.Offset)
					}
				}
			} else {
				if err := codeErr("OffsetFetch", r.ErrorCode); err != nil {
					return err
				}
				for _, t := range r.Topics {
					for _, pp := range t.Partitions {
						if err := codeErr("partition", pp.ErrorCode); err != nil {
							return err
						}
						offsets = append(offsets, pp.Offset)
					}
				}
			}
			if len(offsets) != 1 || offsets[0] != 1 {
				return fmt.Errorf("committed offsets %v, want [1]", offsets)
			}
			return nil
		}},
		{key: 32, build: func(int16) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			r.Resources = append(r.Resources, res)
			return r
		}, check: func(resp kmsg.Response) error {
			r := resp.(*kmsg.DescribeConfigsResponse)
			if len(r.Resources) != 1 {
				return fmt.Errorf("%d resources", len(r.Resources))
			}
			if err := codeErr("resource", r.Resources[0].ErrorCode); err != nil {
				return err
			}
			for _, c := range r.Resources[0].Configs {
				if c.Name == "cleanup.policy" {
					if c.Value == nil || *c.Value != "delete" {
						return fmt.Errorf("cleanup.policy=%v, want delete", c.Value)
					}
					return nil
				}
			}
			return fmt.Errorf("no cleanup.policy among %d configs", len(r.Resources[0].Configs))
		}},
		{key: 60, build: func(int16) kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() },
			check: func(resp kmsg.Response) error {
				r := resp.(*kmsg.DescribeClusterResponse)
				if len(r.Brokers) != 1 || r.ClusterID == "" {
					return fmt.Errorf("%d brokers, cluster id %q", len(r.Brokers), r.ClusterID)
				}
				return codeErr("DescribeCluster", r.ErrorCode)
			}},
	}
}

// recordsEveryVersion produces one record with each Produce version the broker advertises
// (and kmsg knows), then reads all of them back with each Fetch version.
func recordsEveryVersion(ctx context.Context, e *env, adm *kadm.Client, bv kadm.BrokerApiVersions) (string, error) {
	span := func(key int16) (int16, int16, error) {
		lo, hi, ok := bv.KeyVersions(key)
		if !ok {
			return 0, 0, fmt.Errorf("%s not advertised", kmsg.NameForKey(key))
		}
		if km := kmsg.RequestForKey(key).MaxVersion(); km < hi {
			hi = km
		}
		return lo, hi, nil
	}
	pmin, pmax, err := span(0)
	if err != nil {
		return "", err
	}
	// Kafka 4.x advertises Produce v0-v2 but refuses them (KAFKA-18659: old librdkafka
	// turns compression off unless Produce v0 is advertised), so records start at v3.
	advertisedPmin := pmin
	if pmin < 3 {
		pmin = 3
	}
	fmin, fmax, err := span(1)
	if err != nil {
		return "", err
	}
	topic := e.name("special-versions")
	if err := createTopic(ctx, adm, topic, 1, nil); err != nil {
		return "", err
	}
	var want []string
	for v := pmin; v <= pmax; v++ {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(0, v)
		p, err := newClient(e, kgo.DefaultProduceTopic(topic), kgo.MaxVersions(vs), kgo.RecordDeliveryTimeout(10*time.Second))
		if err != nil {
			return "", err
		}
		val := fmt.Sprintf("produce-v%d", v)
		recs, err := produceSync(ctx, p, &kgo.Record{Key: []byte("k"), Value: []byte(val),
			Headers: []kgo.RecordHeader{{Key: "v", Value: []byte(fmt.Sprint(v))}}})
		p.Close()
		if err != nil {
			return "", fmt.Errorf("Produce v%d: %w", v, err)
		}
		if recs[0].Offset != int64(len(want)) {
			return "", fmt.Errorf("Produce v%d: offset %d, want %d", v, recs[0].Offset, len(want))
		}
		want = append(want, val)
	}
	for v := fmin; v <= fmax; v++ {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(1, v)
		c, err := newClient(e, kgo.MaxVersions(vs),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		if err != nil {
			return "", err
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		recs, err := consumeN(rctx, c, len(want))
		cancel()
		c.Close()
		if err != nil {
			return "", fmt.Errorf("Fetch v%d: %w", v, err)
		}
		var got []string
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return "", fmt.Errorf("Fetch v%d read %v, want %v", v, got, want)
		}
	}
	return fmt.Sprintf("Produce advertised v%d-v%d; records produced at Produce v%d-v%d and read back at every Fetch v%d-v%d", advertisedPmin, pmax, pmin, pmax, fmin, fmax), nil
}
