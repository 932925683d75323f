//! StreamsGroupDescribe (api key 89, versions 0-1, KIP-1071): the state, topology and
//! members of streams groups. Field for field Kafka 4.4's `StreamsGroupDescribeRequest.json`
//! and `StreamsGroupDescribeResponse.json`, in wire order.
//!
//! Version 1 adds `include_topology_description` to the request and, per group, the full
//! topology description with its status and the assignor name (ignorable).
//!
//! Thread-safety: plain data. No on-disk format.

pub use super::common::{Endpoint, KeyValue, TaskIds, TaskOffset, TopicInfo};
use crate::wire::{since, since_ignorable, ALL};

/// Kafka's value of `authorized_operations` when they were not asked for.
pub const AUTHORIZED_OPERATIONS_OMITTED: i32 = i32::MIN;

message! {
    /// A StreamsGroupDescribe request.
    pub struct StreamsGroupDescribeRequest {
        /// The groups to describe.
        group_ids: Vec<String> [ALL] = Vec::new(),
        /// Whether to include authorized operations.
        include_authorized_operations: bool [ALL] = false,
        /// v1+: whether to include the full topology description.
        include_topology_description: bool [since(1)] = false,
    }
}

message! {
    /// A StreamsGroupDescribe response.
    pub struct StreamsGroupDescribeResponse {
        /// Quota throttle time.
        throttle_time_ms: i32 [ALL] = 0,
        /// One entry per requested group.
        groups: Vec<DescribedGroup> [ALL] = Vec::new(),
    }
}

message! {
    /// One described group.
    pub struct DescribedGroup {
        /// The describe error, 0 for none.
        error_code: i16 [ALL] = 0,
        /// The error message.
        error_message: Option<String> [ALL] = None,
        /// The group id.
        group_id: String [ALL] = String::new(),
        /// The group state, or empty.
        group_state: String [ALL] = String::new(),
        /// The group epoch.
        group_epoch: i32 [ALL] = 0,
        /// The assignment epoch.
        assignment_epoch: i32 [ALL] = 0,
        /// The topology initialized for the group; null on a describe error.
        topology: Option<Topology> [ALL] = None,
        /// The members.
        members: Vec<Member> [ALL] = Vec::new(),
        /// Bit field of the operations the requester may perform on the group.
        authorized_operations: i32 [ALL] = AUTHORIZED_OPERATIONS_OMITTED,
        /// v1+: the full topology description; set only when its status is 3 (AVAILABLE).
        topology_description: Option<TopologyDescription> [since(1)] = None,
        /// v1+: 0 not requested, 1 not stored, 2 error, 3 available.
        topology_description_status: i8 [since(1)] = 0,
        /// v1+: the assignor of the next assignment; null on a describe error.
        assignor_name: Option<String> [since_ignorable(1)] = None,
    }
}

message! {
    /// The topology initialized for a group.
    pub struct Topology {
        /// The topology epoch.
        epoch: i32 [ALL] = 0,
        /// The configured subtopologies; null if uninitialized or if source topics are
        /// missing or wrongly partitioned.
        subtopologies: Option<Vec<Subtopology>> [ALL] = None,
    }
}

message! {
    /// One configured subtopology.
    pub struct Subtopology {
        /// The subtopology id.
        subtopology_id: String [ALL] = String::new(),
        /// The topics it reads.
        source_topics: Vec<String> [ALL] = Vec::new(),
        /// The repartition topics it writes.
        repartition_sink_topics: Vec<String> [ALL] = Vec::new(),
        /// Its state changelog topics.
        state_changelog_topics: Vec<TopicInfo> [ALL] = Vec::new(),
        /// The repartition topics it reads.
        repartition_source_topics: Vec<TopicInfo> [ALL] = Vec::new(),
    }
}

message! {
    /// One member of a described group.
    pub struct Member {
        /// The member id.
        member_id: String [ALL] = String::new(),
        /// The member epoch.
        member_epoch: i32 [ALL] = 0,
        /// Static membership instance id.
        instance_id: Option<String> [ALL] = None,
        /// Rack id.
        rack_id: Option<String> [ALL] = None,
        /// The client id.
        client_id: String [ALL] = String::new(),
        /// The client host.
        client_host: String [ALL] = String::new(),
        /// The topology epoch of the client.
        topology_epoch: i32 [ALL] = 0,
        /// The streams process the member belongs to.
        process_id: String [ALL] = String::new(),
        /// Interactive Queries endpoint, if defined.
        user_endpoint: Option<Endpoint> [ALL] = None,
        /// Client tags.
        client_tags: Vec<KeyValue> [ALL] = Vec::new(),
        /// Cumulative changelog offsets of tasks.
        task_offsets: Vec<TaskOffset> [ALL] = Vec::new(),
        /// Cumulative changelog end offsets of tasks.
        task_end_offsets: Vec<TaskOffset> [ALL] = Vec::new(),
        /// The current assignment.
        assignment: Assignment [ALL] = Assignment::default(),
        /// The target assignment.
        target_assignment: Assignment [ALL] = Assignment::default(),
        /// A classic member not upgraded yet.
        is_classic: bool [ALL] = false,
    }
}

message! {
    /// Tasks assigned to a member.
    pub struct Assignment {
        /// Active tasks.
        active_tasks: Vec<TaskIds> [ALL] = Vec::new(),
        /// Standby tasks.
        standby_tasks: Vec<TaskIds> [ALL] = Vec::new(),
        /// Warm-up tasks.
        warmup_tasks: Vec<TaskIds> [ALL] = Vec::new(),
    }
}

message! {
    /// The full description of a topology (v1+).
    pub struct TopologyDescription {
        /// Its subtopologies.
        subtopologies: Vec<TopologyDescriptionSubtopology> [ALL] = Vec::new(),
        /// Its global state stores.
        global_stores: Vec<TopologyDescriptionGlobalStore> [ALL] = Vec::new(),
    }
}

message! {
    /// A described subtopology.
    pub struct TopologyDescriptionSubtopology {
        /// Its id, unique in the topology.
        subtopology_id: String [ALL] = String::new(),
        /// Its processing nodes.
        nodes: Vec<TopologyDescriptionNode> [ALL] = Vec::new(),
    }
}

message! {
    /// A processing node.
    pub struct TopologyDescriptionNode {
        /// The node name.
        name: String [ALL] = String::new(),
        /// 1 source, 2 processor, 3 sink.
        node_type: i8 [ALL] = 0,
        /// Source nodes: the topics read.
        source_topics: Vec<String> [ALL] = Vec::new(),
        /// Sink nodes: the topic written, null if dynamic.
        sink_topic: Option<String> [ALL] = None,
        /// Processor nodes: the state stores used.
        stores: Vec<String> [ALL] = Vec::new(),
        /// The successor nodes.
        successors: Vec<String> [ALL] = Vec::new(),
    }
}

message! {
    /// A global state store: the source node feeding it and the processor filling it.
    pub struct TopologyDescriptionGlobalStore {
        /// The source node.
        source: TopologyDescriptionNode [ALL] = TopologyDescriptionNode::default(),
        /// The processor node.
        processor: TopologyDescriptionNode [ALL] = TopologyDescriptionNode::default(),
    }
}
