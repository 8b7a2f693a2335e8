//! The workflow engine shared by the investigation modes (thinkdeep, debug,
//! codereview, precommit, secaudit, analyze, refactor, testgen, tracer, docgen).
//!
//! The calling agent does the investigating, one step per call. The engine
//! keeps every step in a conversation thread, consolidates findings, files,
//! issues and the confidence trail, and tells the agent what to do next. It
//! makes no model call until the final step; then, when the mode asks for
//! it, a provider is configured and no skip rule applies, it consults an
//! expert model with the consolidated findings and the relevant files.
//!
//! Everything mode-specific comes from the manifest's `workflow` section
//! ([`spec::WorkflowSpec`]).

mod consolidate;
pub mod expert;
pub mod git;
pub mod spec;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    ExecContext, ExecError, Executor, RequestShape,
    support::{check_paths, check_step_counts, memory_error, parse_request, record_turn},
};
use crate::{
    catalog::{Manifest, Mode},
    conversation::Turn,
};
pub use consolidate::Consolidated;
use spec::Phase;
pub use spec::WorkflowSpec;

/// The step fields every workflow request carries (the schema checked them).
#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    pub step: String,
    pub step_number: u64,
    pub total_steps: u64,
    pub next_step_required: bool,
    #[serde(default)]
    pub findings: String,
    #[serde(default)]
    pub continuation_id: Option<String>,
    #[serde(default)]
    pub relevant_files: Vec<String>,
}

/// The fields every workflow mode reads; the rest of a request is passed
/// through to the thread and the expert as data.
pub const REQUEST: RequestShape = RequestShape::of::<Step>();

/// What modes that consult an expert read besides [`REQUEST`].
pub const EXPERT_REQUEST: RequestShape = RequestShape::of::<expert::ExpertOptions>();

/// The request types a workflow mode's requests are read into.
pub fn request_shapes(manifest: &Manifest) -> Vec<RequestShape> {
    match WorkflowSpec::from_manifest(manifest) {
        Ok(spec) if spec.expert => vec![REQUEST, EXPERT_REQUEST],
        _ => vec![REQUEST],
    }
}

pub struct WorkflowExecutor {
    spec: WorkflowSpec,
}

impl WorkflowExecutor {
    pub fn new(spec: WorkflowSpec) -> Self {
        WorkflowExecutor { spec }
    }

    /// Reads the mode's `workflow` section; errors say what is wrong with it.
    pub fn for_mode(mode: &Mode) -> Result<Self, String> {
        WorkflowSpec::from_manifest(mode.manifest()).map(Self::new)
    }
}

#[async_trait]
impl Executor for WorkflowExecutor {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let mode = context.mode.name();
        let step: Step = parse_request(request.clone())?;
        check_step_counts(step.step_number, step.total_steps)?;
        // Files the expert will read must exist inside the roots: say so now, not at the end.
        check_paths(context, &step.relevant_files)?;
        if self.spec.gather == Some(spec::Gather::GitChanges) {
            // A repository path outside the roots is the step's error, not a note in its reply.
            git::check_path(context, &request)?;
        }

        if let Some(choice) = &self.spec.choice
            && request.get(&choice.field).and_then(Value::as_str) == Some(&choice.ask_value)
        {
            return Ok(json!({
                "status": format!("{}_selection_required", choice.field),
                "message": format!("Ask the user which {} to use, then call again with it set.", choice.field),
                "options": choice.options,
            }));
        }

        let mut data = request.clone();
        if let Some(fields) = data.as_object_mut() {
            fields.remove("continuation_id");
        }
        let turn = Turn::user(
            mode,
            format!(
                "Step {}/{}: {}\nFindings: {}",
                step.step_number, step.total_steps, step.step, step.findings
            ),
        )
        .with_files(step.relevant_files.clone())
        .with_data(data);
        let thread_id = record_turn(context, step.continuation_id.as_deref(), turn).await?;
        let thread = context
            .services
            .memory
            .get(&thread_id)
            .await
            .map_err(memory_error)?;
        let consolidated = Consolidated::from_thread(&thread, mode);

        let mut reply = Map::new();
        reply.insert("continuation_id".into(), json!(thread_id));
        reply.insert("step_number".into(), json!(step.step_number));
        reply.insert(
            "total_steps".into(),
            json!(step.total_steps.max(step.step_number)),
        );

        let unfinished_counter = self.spec.counter.as_ref().and_then(|counter| {
            let done = request.get(&counter.done).and_then(Value::as_u64)?;
            let total = request.get(&counter.total).and_then(Value::as_u64)?;
            (done < total).then_some((done, total))
        });

        if step.next_step_required || unfinished_counter.is_some() {
            let mut actions: Vec<String> = self
                .spec
                .actions_for(Phase::of(step.step_number, step.total_steps))
                .to_vec();
            if let Some((done, total)) = unfinished_counter
                && !step.next_step_required
            {
                actions.insert(
                    0,
                    format!("Only {done} of {total} files are done: continue with the next file before finishing."),
                );
            }
            reply.insert("status".into(), json!(format!("pause_for_{mode}")));
            reply.insert("next_step_required".into(), json!(true));
            reply.insert("required_actions".into(), json!(actions));
            if self.spec.gather == Some(spec::Gather::GitChanges) && step.step_number == 1 {
                reply.insert("changes".into(), git::summary(context, &request).await);
            }
            reply.insert("investigation".into(), consolidated.status());
            reply.insert(
                "next_steps".into(),
                json!(format!(
                    "Carry out the required actions yourself (no model is consulted until the final step), then call mode \"{mode}\" again, the same way as this step, with step_number {}, your new findings and continuation_id \"{thread_id}\".",
                    step.step_number + 1
                )),
            );
            return Ok(Value::Object(reply));
        }

        reply.insert("status".into(), json!(format!("{mode}_complete")));
        reply.insert("next_step_required".into(), json!(false));
        reply.insert("consolidated_findings".into(), consolidated.report());
        let expert =
            expert::consult(&self.spec, context, &request, &consolidated, &thread_id).await;
        reply.insert("expert_analysis".into(), expert);
        reply.insert("next_steps".into(), json!(self.spec.completion));
        Ok(Value::Object(reply))
    }
}
