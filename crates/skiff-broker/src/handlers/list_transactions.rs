//! ListTransactions v0-1: the transactional ids this coordinator knows, filtered by state
//! names (unknown names are echoed back in `unknown_state_filters`), producer ids and (v1)
//! how long the transaction has been running. v2's transactional-id regex is not served.

use std::sync::Arc;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ListTransactionsRequest, ListTransactionsResponse, ProducerId, TransactionalId,
};

use super::str_bytes;
use crate::broker::Broker;

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

pub fn handle(
    broker: &Arc<Broker>,
    version: i16,
    request: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let list = match broker.txn.list() {
        Ok(l) => l,
        Err(e) => return ListTransactionsResponse::default().with_error_code(e.code()),
    };
    let now = broker.clock.now_ms();
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
        .filter(|m| states.is_empty() || states.iter().any(|s| s == m.state.name()))
        .filter(|m| pids.is_empty() || pids.contains(&m.producer_id))
        .filter(|m| duration < 0 || now.saturating_sub(m.start_ms) >= duration)
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
