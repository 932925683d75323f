//! ListTransactions v0-2: the transactional ids this coordinator knows, filtered by state
//! names (unknown names are echoed back in `unknown_state_filters`), producer ids, (v1) how
//! long the transaction has been running and (v2, KIP-1152) a transactional-id regular
//! expression. Kafka 4.4 compiles that pattern with RE2/J and requires a whole-id match
//! (`Matcher.matches`); Skiff uses the `regex` crate (RE2 syntax too) anchored at both ends,
//! so the two agree except at the edges of RE2 dialects (e.g. `\C`, or Unicode classes the
//! `regex` crate knows and RE2/J does not). A null or empty pattern filters nothing; one
//! that does not compile answers INVALID_REGULAR_EXPRESSION, as Kafka does.
//!
//! With an authorizer only the ids the requester may TRANSACTIONAL_ID DESCRIBE are listed.

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, ResponseKind, TransactionalId,
};

use super::str_bytes;
use crate::authz::{AclOperation, ResourceType};
use crate::context::RequestContext;
use crate::dispatch::Reply;
use crate::errors::BrokerError;

/// Every state name ListTransactions may filter on.
const STATES: [&str; 8] = [
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
];

pub async fn handle(ctx: &RequestContext, request: ListTransactionsRequest) -> Reply {
    Reply::Respond(ResponseKind::ListTransactions(answer(ctx, request)))
}

fn answer(ctx: &RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse {
    let (broker, version) = (&ctx.broker, ctx.version());
    let pattern = match request
        .transactional_id_pattern
        .as_ref()
        .filter(|p| version >= 2 && !p.is_empty())
        .map(|p| id_pattern(p))
        .transpose()
    {
        Ok(p) => p,
        Err(e) => return ListTransactionsResponse::default().with_error_code(ctx.code(&e)),
    };
    let list = match broker.txn.list() {
        Ok(l) => l,
        Err(e) => {
            return ListTransactionsResponse::default()
                .with_error_code(ctx.code(&BrokerError::Coordinator(e)))
        }
    };
    let now = broker.clock.now_ms();
    let authz = ctx.authz();
    let states: Vec<String> = request
        .state_filters
        .iter()
        .map(|s| s.to_string())
        .collect();
    let unknown = states
        .iter()
        .filter(|s| !STATES.contains(&s.as_str()))
        .map(|s| str_bytes(s))
        .collect();
    let pids: Vec<i64> = request.producer_id_filters.iter().map(|p| p.0).collect();
    let duration = if version >= 1 {
        request.duration_filter
    } else {
        -1
    };
    let transaction_states = list
        .into_iter()
        .filter(|m| {
            authz.allows(
                AclOperation::Describe,
                ResourceType::TransactionalId,
                &m.transactional_id,
            )
        })
        .filter(|m| states.is_empty() || states.iter().any(|s| s == m.state.name()))
        .filter(|m| pids.is_empty() || pids.contains(&m.producer_id))
        .filter(|m| duration < 0 || now.saturating_sub(m.start_ms) >= duration)
        .filter(|m| {
            pattern
                .as_ref()
                .is_none_or(|p| p.is_match(&m.transactional_id))
        })
        .map(|m| {
            TransactionState::default()
                .with_transactional_id(TransactionalId(str_bytes(&m.transactional_id)))
                .with_producer_id(ProducerId(m.producer_id))
                .with_transaction_state(str_bytes(m.state.name()))
        })
        .collect();
    ListTransactionsResponse::default()
        .with_unknown_state_filters(unknown)
        .with_transaction_states(transaction_states)
}

/// Compiles a KIP-1152 pattern for whole-id matches (Kafka's `Matcher.matches`).
/// The pattern is compiled alone first: once it is valid its groups are balanced, so the
/// anchored wrapper can not change its meaning.
fn id_pattern(pattern: &str) -> Result<regex::Regex, BrokerError> {
    regex::Regex::new(pattern)
        .and_then(|_| regex::Regex::new(&format!("^(?:{pattern})$")))
        .map_err(|e| {
            tracing::debug!(pattern, error = %e, "ListTransactions: invalid transactional id pattern");
            BrokerError::InvalidRegex(e.to_string())
        })
}
