//! The broker-side task assignor of streams groups ("sticky", the one Kafka 4.4 runs by
//! default): spreads tasks evenly over members, keeps a task where it ran, and places standby
//! replicas of stateful tasks on other processes.
//!
//! A task is (sub-topology, partition). Members belong to processes (one Kafka Streams
//! instance runs several stream threads, each a member); a process's load is its task count
//! over its member count. The rules:
//! - **Active tasks.** Each member may take up to its share (`ceil(tasks / members)`, recounted
//!   as members fill up). A task first stays with the member that runs it now, if that member
//!   is under its share; then goes to the least-loaded member that holds it as a standby (or
//!   reported offsets for it: it has the state); the rest go, in task order, to the least
//!   loaded process and within it the least loaded member.
//! - **Standby tasks** (only with `num.standby.replicas` > 0, only for stateful
//!   sub-topologies): a process never holds two copies of one task. Each replica goes first to
//!   the previous active owner (the state is there), then to previous standby holders in
//!   order of preference (a current standby first, then the largest reported offset sum),
//!   each only while under its share of all tasks; what is left goes to the least-loaded
//!   process that lacks the task. When no process can take it, the replica is dropped with a
//!   warning, as in Kafka.
//!
//! Ties break by process id, then member id, so the result is deterministic (Kafka's depends
//! on hash order). Warm-up tasks are not assigned (Kafka 4.4's sticky assignor does not
//! either).

use std::collections::{BTreeMap, BTreeSet};

/// Tasks by sub-topology id: the partitions (task numbers) of each.
pub type Tasks = BTreeMap<String, BTreeSet<i32>>;

/// One task.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId {
    pub subtopology: String,
    pub partition: i32,
}

/// What the assignor knows of a member.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberSpec {
    pub id: String,
    pub process_id: String,
    /// The tasks it has been assigned and runs now.
    pub active: Tasks,
    pub standby: Tasks,
    /// Changelog offset sums it reported per task (state it has on disk).
    pub task_offsets: BTreeMap<TaskId, i64>,
}

/// A sub-topology's task count and whether it keeps state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubtopologySpec {
    pub id: String,
    pub tasks: i32,
    pub stateful: bool,
}

/// One member's new target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemberTasks {
    pub active: Tasks,
    pub standby: Tasks,
}

/// Computes every member's target. Members absent from the result get nothing.
pub fn assign(
    members: &[MemberSpec],
    subtopologies: &[SubtopologySpec],
    standby_replicas: u32,
) -> BTreeMap<String, MemberTasks> {
    let mut state = State::new(members, subtopologies, standby_replicas);
    state.assign_active(subtopologies);
    if standby_replicas > 0 {
        state.assign_standby(subtopologies);
    }
    state.result(members)
}

#[derive(Default)]
struct Process {
    /// Member id → tasks it has been given (active and standby).
    load: BTreeMap<String, usize>,
    tasks: BTreeSet<TaskId>,
}

impl Process {
    /// Tasks per member; an empty process counts as full.
    fn load(&self) -> f64 {
        if self.load.is_empty() {
            return f64::MAX;
        }
        self.tasks_total() as f64 / self.load.len() as f64
    }

    fn tasks_total(&self) -> usize {
        self.load.values().sum()
    }

    fn least_loaded_member(&self) -> Option<&str> {
        self.load
            .iter()
            .min_by_key(|(id, n)| (**n, id.as_str()))
            .map(|(id, _)| id.as_str())
    }
}

/// A share that shrinks as members reach it: `ceil(remaining tasks / remaining members)`.
struct Quota {
    tasks: usize,
    members: usize,
    per_member: usize,
}

impl Quota {
    fn new(tasks: usize, members: usize) -> Quota {
        Quota {
            tasks,
            members,
            per_member: per_member(tasks, members),
        }
    }

    /// A member now holds `count`: if that fills its share, it leaves the count.
    fn observe(&mut self, count: usize) {
        if count == self.per_member && self.members > 0 {
            self.members -= 1;
            self.tasks = self.tasks.saturating_sub(count);
            self.per_member = per_member(self.tasks, self.members);
        }
    }
}

fn per_member(tasks: usize, members: usize) -> usize {
    if members == 0 {
        0
    } else {
        tasks.div_ceil(members)
    }
}

struct State {
    processes: BTreeMap<String, Process>,
    process_of: BTreeMap<String, String>,
    active: BTreeMap<String, BTreeSet<TaskId>>,
    standby: BTreeMap<String, BTreeSet<TaskId>>,
    prev_active: BTreeMap<TaskId, String>,
    /// Members that hold state of a task, best first.
    prev_standby: BTreeMap<TaskId, Vec<String>>,
    active_quota: Quota,
    total_quota: Quota,
    replicas: u32,
}

impl State {
    fn new(members: &[MemberSpec], subtopologies: &[SubtopologySpec], replicas: u32) -> State {
        let mut processes: BTreeMap<String, Process> = BTreeMap::new();
        let mut process_of = BTreeMap::new();
        let mut prev_active = BTreeMap::new();
        // (task) -> (member, is current standby, offset sum)
        let mut candidates: BTreeMap<TaskId, Vec<(String, bool, i64)>> = BTreeMap::new();
        for m in members {
            processes
                .entry(m.process_id.clone())
                .or_default()
                .load
                .insert(m.id.clone(), 0);
            process_of.insert(m.id.clone(), m.process_id.clone());
            for task in task_ids(&m.active) {
                prev_active.insert(task, m.id.clone());
            }
            let standby: BTreeSet<TaskId> = task_ids(&m.standby).collect();
            for task in &standby {
                let sum = m.task_offsets.get(task).copied().unwrap_or(0);
                candidates
                    .entry(task.clone())
                    .or_default()
                    .push((m.id.clone(), true, sum));
            }
            for (task, sum) in &m.task_offsets {
                if !standby.contains(task) {
                    candidates
                        .entry(task.clone())
                        .or_default()
                        .push((m.id.clone(), false, *sum));
                }
            }
        }
        let prev_standby = candidates
            .into_iter()
            .map(|(task, mut c)| {
                c.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
                (task, c.into_iter().map(|(m, _, _)| m).collect())
            })
            .collect();
        let active_tasks: usize = subtopologies.iter().map(task_count).sum();
        let standby_tasks: usize = subtopologies
            .iter()
            .filter(|s| s.stateful)
            .map(task_count)
            .sum::<usize>()
            * replicas as usize;
        State {
            processes,
            process_of,
            active: BTreeMap::new(),
            standby: BTreeMap::new(),
            prev_active,
            prev_standby,
            active_quota: Quota::new(active_tasks, members.len()),
            total_quota: Quota::new(active_tasks + standby_tasks, members.len()),
            replicas,
        }
    }

    fn count(&self, member: &str) -> usize {
        self.process_of
            .get(member)
            .and_then(|p| self.processes.get(p))
            .and_then(|p| p.load.get(member))
            .copied()
            .unwrap_or(0)
    }

    fn process_has(&self, member: &str, task: &TaskId) -> bool {
        self.process_of
            .get(member)
            .and_then(|p| self.processes.get(p))
            .is_some_and(|p| p.tasks.contains(task))
    }

    fn give(&mut self, member: &str, task: TaskId, active: bool) {
        let Some(process) = self
            .process_of
            .get(member)
            .and_then(|p| self.processes.get_mut(p))
        else {
            return;
        };
        process.tasks.insert(task.clone());
        let count = process.load.entry(member.to_string()).or_default();
        *count += 1;
        let count = *count;
        let to = if active {
            &mut self.active
        } else {
            &mut self.standby
        };
        to.entry(member.to_string()).or_default().insert(task);
        if active {
            self.active_quota.observe(count);
        }
        self.total_quota.observe(count);
    }

    /// Among `members`, the one on the least-loaded process (then least-loaded member),
    /// skipping processes that already hold `standby_of`.
    fn least_loaded_of(&self, members: &[String], standby_of: Option<&TaskId>) -> Option<String> {
        members
            .iter()
            .filter(|m| standby_of.is_none_or(|t| !self.process_has(m, t)))
            .filter_map(|m| {
                let p = self.processes.get(self.process_of.get(m)?)?;
                Some((p.load(), self.count(m), m))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)))
            .map(|(_, _, m)| m.clone())
    }

    /// The least-loaded process (ties: more members, then id) that passes `ok`.
    fn least_loaded_process(&self, ok: impl Fn(&Process) -> bool) -> Option<String> {
        self.processes
            .iter()
            .filter(|(_, p)| !p.load.is_empty() && ok(p))
            .min_by(|a, b| {
                a.1.load()
                    .total_cmp(&b.1.load())
                    .then(b.1.load.len().cmp(&a.1.load.len()))
                    .then(a.0.cmp(b.0))
            })
            .map(|(id, _)| id.clone())
    }

    fn assign_active(&mut self, subtopologies: &[SubtopologySpec]) {
        let mut tasks: Vec<TaskId> = all_tasks(subtopologies, false);
        // Stickiness is judged partition by partition across sub-topologies, so one member
        // does not keep a whole sub-topology while another keeps nothing.
        tasks.sort_by(|a, b| {
            a.partition
                .cmp(&b.partition)
                .then(a.subtopology.cmp(&b.subtopology))
        });
        let mut left = Vec::new();
        for task in tasks {
            match self.prev_active.get(&task).cloned() {
                Some(m) if self.count(&m) < self.active_quota.per_member => {
                    self.give(&m, task, true)
                }
                _ => left.push(task),
            }
        }
        let mut rest = Vec::new();
        for task in left {
            let holders = self.prev_standby.get(&task).cloned().unwrap_or_default();
            match self.least_loaded_of(&holders, None) {
                Some(m) if self.count(&m) < self.active_quota.per_member => {
                    self.give(&m, task, true)
                }
                _ => rest.push(task),
            }
        }
        rest.sort();
        for task in rest {
            let Some(process) = self.least_loaded_process(|_| true) else {
                return;
            };
            let member = self.processes[&process]
                .least_loaded_member()
                .map(str::to_string);
            if let Some(m) = member {
                self.give(&m, task, true);
            }
        }
    }

    fn assign_standby(&mut self, subtopologies: &[SubtopologySpec]) {
        let mut tasks = all_tasks(subtopologies, true);
        tasks.sort_by(|a, b| {
            b.partition
                .cmp(&a.partition)
                .then(b.subtopology.cmp(&a.subtopology))
        });
        let mut remaining: Vec<(TaskId, u32)> = Vec::new();
        for task in tasks {
            let mut placed = 0;
            while placed < self.replicas {
                if let Some(m) = self.prev_active.get(&task).cloned() {
                    if !self.process_has(&m, &task) && self.count(&m) < self.total_quota.per_member
                    {
                        self.give(&m, task.clone(), false);
                        placed += 1;
                        continue;
                    }
                }
                let holders = self.prev_standby.get(&task).cloned().unwrap_or_default();
                match self.least_loaded_of(&holders, Some(&task)) {
                    Some(m) if self.count(&m) < self.total_quota.per_member => {
                        self.give(&m, task.clone(), false);
                        placed += 1;
                    }
                    _ => break,
                }
            }
            remaining.push((task, self.replicas - placed));
        }
        remaining.sort_by(|a, b| b.0.cmp(&a.0));
        for (task, replicas) in remaining {
            for i in 0..replicas {
                let process = self.least_loaded_process(|p| !p.tasks.contains(&task));
                let member = process
                    .and_then(|p| self.processes[&p].least_loaded_member().map(str::to_string));
                match member {
                    Some(m) => self.give(&m, task.clone(), false),
                    None => {
                        tracing::warn!(
                            subtopology = %task.subtopology,
                            partition = task.partition,
                            "Unable to assign {} of {} standby tasks: there is not enough available capacity. You should increase the number of threads and/or application instances to maintain the requested number of standby replicas.",
                            replicas - i,
                            self.replicas
                        );
                        break;
                    }
                }
            }
        }
    }

    fn result(self, members: &[MemberSpec]) -> BTreeMap<String, MemberTasks> {
        let compact = |tasks: Option<&BTreeSet<TaskId>>| {
            let mut out = Tasks::new();
            for t in tasks.into_iter().flatten() {
                out.entry(t.subtopology.clone())
                    .or_default()
                    .insert(t.partition);
            }
            out
        };
        members
            .iter()
            .map(|m| {
                (
                    m.id.clone(),
                    MemberTasks {
                        active: compact(self.active.get(&m.id)),
                        standby: compact(self.standby.get(&m.id)),
                    },
                )
            })
            .collect()
    }
}

fn task_count(s: &SubtopologySpec) -> usize {
    usize::try_from(s.tasks).unwrap_or(0)
}

fn all_tasks(subtopologies: &[SubtopologySpec], stateful_only: bool) -> Vec<TaskId> {
    subtopologies
        .iter()
        .filter(|s| !stateful_only || s.stateful)
        .flat_map(|s| {
            (0..s.tasks.max(0)).map(|p| TaskId {
                subtopology: s.id.clone(),
                partition: p,
            })
        })
        .collect()
}

/// The tasks of a compact map, one by one.
pub fn task_ids(tasks: &Tasks) -> impl Iterator<Item = TaskId> + '_ {
    tasks.iter().flat_map(|(s, ps)| {
        ps.iter().map(|p| TaskId {
            subtopology: s.clone(),
            partition: *p,
        })
    })
}
