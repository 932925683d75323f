// Scenario admin: kadm CreateTopics with configs, Metadata, DescribeConfigs,
// IncrementalAlterConfigs (set, delete, append to a list), CreatePartitions, error codes for
// a duplicate topic and a bad config value, DeleteTopics.
package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func runAdmin(ctx context.Context, e *env) (string, error) {
	adm, cl, err := newAdmin(e)
	if err != nil {
		return "", err
	}
	defer cl.Close()
	topic := e.name("admin")

	// Create with configs; the CreateTopics response (v5+) echoes partitions and configs.
	created, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{
		"retention.ms":      strp("3600000"),
		"max.message.bytes": strp("2000000"),
		"cleanup.policy":    strp("delete"),
	}, topic)
	if err != nil {
		return "", fmt.Errorf("CreateTopic: %w", err)
	}
	if created.Err != nil {
		return "", fmt.Errorf("CreateTopic: %w (%s)", created.Err, created.ErrMessage)
	}
	if created.NumPartitions != 3 || created.ReplicationFactor != 1 {
		return "", fmt.Errorf("CreateTopic answered partitions=%d rf=%d, want 3 and 1", created.NumPartitions, created.ReplicationFactor)
	}
	if c, ok := created.Configs["retention.ms"]; !ok || c.MaybeValue() != "3600000" {
		return "", fmt.Errorf("CreateTopic response configs: retention.ms=%q, want 3600000", c.MaybeValue())
	}
	if created.ID == (kadm.TopicID{}) {
		return "", errors.New("CreateTopic response has a zero topic ID")
	}

	// Kafka's brokers learn of a new topic or partition through the metadata log: poll.
	if err := pollPartitions(ctx, cl, topic, 3); err != nil {
		return "", err
	}

	// DescribeConfigs: our overrides are DYNAMIC_TOPIC_CONFIG, an untouched key is a default.
	if err := expectConfig(ctx, adm, topic, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig); err != nil {
		return "", err
	}
	if err := expectConfig(ctx, adm, topic, "max.message.bytes", "2000000", kmsg.ConfigSourceDynamicTopicConfig); err != nil {
		return "", err
	}
	if err := expectConfig(ctx, adm, topic, "segment.bytes", "", kmsg.ConfigSourceDefaultConfig); err != nil {
		return "", err
	}

	// IncrementalAlterConfigs: set one key, delete another, append to cleanup.policy.
	alter := []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("7200000")},
		{Op: kadm.DeleteConfig, Name: "max.message.bytes"},
		{Op: kadm.AppendConfig, Name: "cleanup.policy", Value: strp("compact")},
	}
	ar, err := adm.AlterTopicConfigs(ctx, alter, topic)
	if err != nil {
		return "", fmt.Errorf("IncrementalAlterConfigs: %w", err)
	}
	if r, err := ar.On(topic, nil); err != nil || r.Err != nil {
		return "", fmt.Errorf("IncrementalAlterConfigs %s: %v %v (%s)", topic, err, r.Err, r.ErrMessage)
	}
	// Kafka applies an alter through its metadata log, so a describe right after it may
	// still show the old values: poll (bounded) until all three changes are visible.
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err = pollUntil(pctx, 100*time.Millisecond, func() error {
		if err := expectConfig(pctx, adm, topic, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig); err != nil {
			return fmt.Errorf("after SET: %w", err)
		}
		if err := expectConfigNot(pctx, adm, topic, "max.message.bytes", kmsg.ConfigSourceDynamicTopicConfig); err != nil {
			return fmt.Errorf("after DELETE: %w", err)
		}
		if err := expectConfig(pctx, adm, topic, "cleanup.policy", "delete,compact", kmsg.ConfigSourceDynamicTopicConfig); err != nil {
			return fmt.Errorf("after APPEND: %w", err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}

	// CreatePartitions: add 2 to get 5.
	cp, err := adm.CreatePartitions(ctx, 2, topic)
	if err != nil {
		return "", fmt.Errorf("CreatePartitions: %w", err)
	}
	if r := cp[topic]; r.Err != nil {
		return "", fmt.Errorf("CreatePartitions %s: %w (%s)", topic, r.Err, r.ErrMessage)
	}
	if err := pollPartitions(ctx, cl, topic, 5); err != nil {
		return "", fmt.Errorf("after CreatePartitions: %w", err)
	}

	// Error codes: the same name again, and a config value that does not parse.
	// kadm.CreateTopic returns the per-topic error as err as well.
	dup, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if !errors.Is(dup.Err, kerr.TopicAlreadyExists) || !errors.Is(err, kerr.TopicAlreadyExists) {
		return "", fmt.Errorf("CreateTopic of an existing topic: got %v / %v, want TOPIC_ALREADY_EXISTS", err, dup.Err)
	}
	bad := e.name("admin-bad")
	bc, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": strp("not-a-number")}, bad)
	if !errors.Is(bc.Err, kerr.InvalidConfig) || !errors.Is(err, kerr.InvalidConfig) {
		return "", fmt.Errorf("CreateTopic with retention.ms=not-a-number: got %v (%s), want INVALID_CONFIG", bc.Err, bc.ErrMessage)
	}

	// Delete; Metadata stops listing it.
	dr, err := adm.DeleteTopics(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("DeleteTopics: %w", err)
	}
	if r := dr[topic]; r.Err != nil {
		return "", fmt.Errorf("DeleteTopics %s: %w (%s)", topic, r.Err, r.ErrMessage)
	}
	dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
	defer dcancel()
	err = pollUntil(dctx, 200*time.Millisecond, func() error {
		// A raw Metadata request: kadm.ListTopics may answer from kgo's metadata cache.
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(dctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || !errors.Is(kerr.ErrorForCode(resp.Topics[0].ErrorCode), kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("Metadata for %s after delete: %d topics, first error code %v; want UNKNOWN_TOPIC_OR_PARTITION", topic, len(resp.Topics), firstCode(resp))
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return "create(3p, configs)/describe(sources)/incremental alter(set,delete,append)/create partitions(3->5)/TOPIC_ALREADY_EXISTS/INVALID_CONFIG/delete", nil
}

func pollPartitions(ctx context.Context, cl *kgo.Client, topic string, n int) error {
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return pollUntil(pctx, 100*time.Millisecond, func() error { return expectPartitions(pctx, cl, topic, n) })
}

// expectPartitions checks the topic has n partitions, each with a leader, with a raw
// Metadata request (kadm.ListTopics may answer from kgo's metadata cache).
func expectPartitions(ctx context.Context, cl *kgo.Client, topic string, n int) error {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("Metadata: %w", err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return fmt.Errorf("Metadata for %s: %d topics, error code %d", topic, len(resp.Topics), firstCode(resp))
	}
	parts := resp.Topics[0].Partitions
	if len(parts) != n {
		return fmt.Errorf("Metadata for %s: %d partitions, want %d", topic, len(parts), n)
	}
	for _, p := range parts {
		if p.ErrorCode != 0 || p.Leader < 0 {
			return fmt.Errorf("Metadata for %s/%d: leader=%d error code %d", topic, p.Partition, p.Leader, p.ErrorCode)
		}
	}
	return nil
}

func describeKey(ctx context.Context, adm *kadm.Client, topic, key string) (kadm.Config, error) {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return kadm.Config{}, fmt.Errorf("DescribeConfigs: %w", err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		return kadm.Config{}, fmt.Errorf("DescribeConfigs %s: %v %v (%s)", topic, err, rc.Err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			return c, nil
		}
	}
	return kadm.Config{}, fmt.Errorf("DescribeConfigs %s: no %s among %d configs", topic, key, len(rc.Configs))
}

// expectConfig checks a key's value (unless want is "") and source.
func expectConfig(ctx context.Context, adm *kadm.Client, topic, key, want string, src kmsg.ConfigSource) error {
	c, err := describeKey(ctx, adm, topic, key)
	if err != nil {
		return err
	}
	if want != "" && c.MaybeValue() != want {
		return fmt.Errorf("config %s=%q, want %q", key, c.MaybeValue(), want)
	}
	if c.Source != src {
		return fmt.Errorf("config %s source %s, want %s", key, c.Source, src)
	}
	return nil
}

func expectConfigNot(ctx context.Context, adm *kadm.Client, topic, key string, src kmsg.ConfigSource) error {
	c, err := describeKey(ctx, adm, topic, key)
	if err != nil {
		return err
	}
	if c.Source == src {
		return fmt.Errorf("config %s still has source %s (value %q)", key, src, c.MaybeValue())
	}
	return nil
}

func firstCode(resp *kmsg.MetadataResponse) int16 {
	if len(resp.Topics) == 0 {
		return -1
	}
	return resp.Topics[0].ErrorCode
}
