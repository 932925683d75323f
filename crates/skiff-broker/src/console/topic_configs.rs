//! A topic's configs on the Topics pages: reading them with DescribeConfigs (values, where
//! each comes from, sensitive values hidden), the configs table and the form that changes
//! one with IncrementalAlterConfigs, both as the caller (DESCRIBE_CONFIGS and ALTER_CONFIGS
//! on the topic, as for a Kafka admin client).

use std::collections::HashMap;
use std::fmt::Write as _;

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::Form;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, DescribeConfigsRequest, IncrementalAlterConfigsRequest, RequestKind,
};
use serde::Deserialize;

use super::{error_name, kafka_failure, str_bytes, table_with_id, topic_denied};
use crate::authz::{AclOperation, ResourceType};
use crate::console::call::{expect_response, Caller};
use crate::console::forms::{self, Action};
use crate::console::page::{esc, url, PageError};

/// Kafka's config resource type of a topic.
const TOPIC_RESOURCE: i8 = 2;
/// IncrementalAlterConfigs operations.
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

/// One config of a topic as DescribeConfigs reports it.
#[derive(Clone, Debug)]
pub struct TopicConfig {
    pub name: String,
    pub value: Option<String>,
    pub source: i8,
    pub sensitive: bool,
}

impl TopicConfig {
    /// Set somewhere (on the topic or the broker), not Kafka's default nor the broker's
    /// static (default) configuration.
    pub fn non_default(&self) -> bool {
        !matches!(self.source, 4 | 5)
    }

    /// The value as the page shows it: sensitive values hidden.
    pub fn shown(&self) -> String {
        if self.sensitive {
            "(hidden)".to_string()
        } else {
            self.value.clone().unwrap_or_else(|| "null".to_string())
        }
    }
}

/// Kafka's names of the config sources.
fn source_name(source: i8) -> &'static str {
    match source {
        1 => "topic (DYNAMIC_TOPIC_CONFIG)",
        2 => "broker (DYNAMIC_BROKER_CONFIG)",
        3 => "cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG)",
        4 => "broker file (STATIC_BROKER_CONFIG)",
        5 => "default (DEFAULT_CONFIG)",
        6 => "DYNAMIC_BROKER_LOGGER_CONFIG",
        _ => "UNKNOWN",
    }
}

/// The configs of each named topic, or the Kafka error code DescribeConfigs gave for it
/// (TOPIC_AUTHORIZATION_FAILED without DESCRIBE_CONFIGS).
pub async fn describe_configs(
    caller: &Caller,
    topics: &[&str],
) -> Result<HashMap<String, Result<Vec<TopicConfig>, i16>>, PageError> {
    if topics.is_empty() {
        return Ok(HashMap::new());
    }
    let request = DescribeConfigsRequest::default()
        .with_resources(
            topics
                .iter()
                .map(|t| {
                    DescribeConfigsResource::default()
                        .with_resource_type(TOPIC_RESOURCE)
                        .with_resource_name(str_bytes(t))
                        .with_configuration_keys(None)
                })
                .collect(),
        )
        .with_include_synonyms(false)
        .with_include_documentation(false);
    let response = expect_response!(
        caller
            .kafka(
                ApiKey::DescribeConfigs,
                4,
                RequestKind::DescribeConfigs(request)
            )
            .await?,
        DescribeConfigs
    )?;
    Ok(response
        .results
        .iter()
        .map(|r| {
            let value = if r.error_code == 0 {
                let mut configs: Vec<TopicConfig> = r
                    .configs
                    .iter()
                    .map(|c| TopicConfig {
                        name: c.name.to_string(),
                        value: c.value.as_ref().map(|v| v.to_string()),
                        source: c.config_source,
                        sensitive: c.is_sensitive,
                    })
                    .collect();
                configs.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(configs)
            } else {
                Err(r.error_code)
            };
            (r.resource_name.to_string(), value)
        })
        .collect())
}

/// The configs table (id="configs") and, unless read-only or refused by the ACLs, the form
/// that changes one (id="alter-config").
pub fn configs_section(
    caller: &Caller,
    topic: &str,
    entries: Option<&Result<Vec<TopicConfig>, i16>>,
    read_only: bool,
) -> String {
    let mut out = String::new();
    let names: Vec<String> = match entries {
        Some(Ok(configs)) => {
            let rows: Vec<Vec<String>> = configs
                .iter()
                .map(|c| {
                    let value = if c.sensitive {
                        "<span class=\"muted\">(hidden)</span>".to_string()
                    } else {
                        match &c.value {
                            Some(v) => format!("<code>{}</code>", esc(v)),
                            None => "<span class=\"muted\">null</span>".to_string(),
                        }
                    };
                    let name = if c.non_default() {
                        format!("<strong>{}</strong>", esc(&c.name))
                    } else {
                        esc(&c.name)
                    };
                    vec![name, value, esc(source_name(c.source))]
                })
                .collect();
            out.push_str(&table_with_id(
                "configs",
                "Configs in force (DescribeConfigs); those that differ from the defaults are bold",
                &["Name", "Value", "Source"],
                &[false, false, false],
                &rows,
            ));
            configs.iter().map(|c| c.name.clone()).collect()
        }
        Some(Err(code)) => {
            let _ = write!(
                out,
                "<p class=\"muted\">The configs are not shown: {}.</p>",
                esc(&error_name(*code))
            );
            Vec::new()
        }
        None => Vec::new(),
    };
    if !read_only && caller.may(AclOperation::AlterConfigs, ResourceType::Topic, topic) {
        let mut options = String::new();
        for n in &names {
            let _ = write!(options, "<option value=\"{}\">", esc(n));
        }
        let _ = write!(
            out,
            "<form id=\"alter-config\" class=\"topic-form\" method=\"post\" \
             action=\"/console/topics/{u}/config\">\
             <label for=\"alter-key\">Config</label>\
             <input id=\"alter-key\" name=\"key\" required list=\"config-names\" autocomplete=\"off\">\
             <datalist id=\"config-names\">{options}</datalist>\
             <label for=\"alter-value\">Value</label>\
             <input id=\"alter-value\" name=\"value\" autocomplete=\"off\">\
             <label for=\"alter-op\">Operation</label>\
             <select id=\"alter-op\" name=\"op\"><option value=\"set\">set</option>\
             <option value=\"delete\">delete (back to the default)</option></select>\
             <button type=\"submit\">Apply</button></form>",
            u = url(topic),
        );
    }
    out
}

#[derive(Deserialize)]
pub struct AlterForm {
    key: Option<String>,
    value: Option<String>,
    op: Option<String>,
}

/// POST /console/topics/{topic}/config: IncrementalAlterConfigs as the caller.
pub async fn alter(
    Action(caller): Action,
    Path(topic): Path<String>,
    Form(f): Form<AlterForm>,
) -> Result<Response, PageError> {
    let key = forms::required(&f.key, "key")?.to_string();
    let (op, value, what) = match f.op.as_deref().unwrap_or("set") {
        "set" => {
            let value = f.value.as_deref().unwrap_or("").trim().to_string();
            let what = format!("Set {key}={value}");
            (OP_SET, Some(value), what)
        }
        "delete" => (OP_DELETE, None, format!("Removed the override of {key}")),
        other => {
            return Err(PageError::bad_request(format!(
                "op: {other:?} is neither set nor delete"
            )))
        }
    };
    let request = IncrementalAlterConfigsRequest::default()
        .with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(str_bytes(&topic))
            .with_configs(vec![AlterableConfig::default()
                .with_name(str_bytes(&key))
                .with_config_operation(op)
                .with_value(value.as_deref().map(str_bytes))])])
        .with_validate_only(false);
    let response = expect_response!(
        caller
            .kafka(
                ApiKey::IncrementalAlterConfigs,
                1,
                RequestKind::IncrementalAlterConfigs(request)
            )
            .await?,
        IncrementalAlterConfigs
    )?;
    let result = response
        .responses
        .first()
        .ok_or_else(|| PageError::internal("IncrementalAlterConfigs answered no resource"))?;
    match result.error_code {
        0 => Ok(forms::done(&format!("/console/topics/{}", url(&topic)), &what).into_response()),
        29 => Err(topic_denied()),
        code => Err(kafka_failure(code, result.error_message.as_deref())),
    }
}
