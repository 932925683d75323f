//! [`BrokerBuilder`]: how a [`Broker`] is started with something other than the defaults —
//! today the clock. `Broker::start(config)` is `Broker::builder(config).start()`.
//!
//! The clock given here is the one every time-based decision the broker owns reads: log
//! rolls, retention and LogAppendTime (through each log), the cleaner's scheduling and
//! `delete.retention.ms` horizons, group session and rebalance timeouts, offsets retention,
//! transaction timeouts and `transactional.id.expiration.ms`, `flush.ms` and the housekeeping
//! intervals. How often the background threads wake up to look (their tick) stays in real
//! time, so with a manual clock a test moves the clock and then waits at most one tick.
//! Network timeouts (idle connections, request deadlines) stay in real time too: they belong
//! to sockets, not to the broker's state.

use std::sync::Arc;

use skiff_config::BrokerConfig;
use skiff_log::{Clock, SystemClock};

use crate::broker::{Broker, StartError};

/// Settings for starting a [`Broker`]; see the module docs.
pub struct BrokerBuilder {
    config: BrokerConfig,
    clock: Arc<dyn Clock>,
}

impl BrokerBuilder {
    /// A builder with the wall clock.
    pub fn new(config: BrokerConfig) -> BrokerBuilder {
        BrokerBuilder {
            config,
            clock: Arc::new(SystemClock),
        }
    }

    /// The time source for everything time-based the broker owns (tests: a
    /// [`skiff_log::ManualClock`]).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> BrokerBuilder {
        self.clock = clock;
        self
    }

    /// Opens (and recovers) the data dir, loads the topics, starts the background threads.
    /// Blocking: call it from a blocking thread in async code.
    pub fn start(self) -> Result<Arc<Broker>, StartError> {
        Broker::open(self.config, self.clock)
    }
}

impl Broker {
    /// A builder for a broker on `config`; see [`BrokerBuilder`].
    pub fn builder(config: BrokerConfig) -> BrokerBuilder {
        BrokerBuilder::new(config)
    }
}
