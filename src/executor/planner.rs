//! `planner`: builds a plan one step per call, with revisions and branches.
//!
//! Steps are kept in the conversation thread that the first step opens, so
//! a plan can be continued later, or discussed in another mode (chat) under
//! the same `continuation_id`. The plan is rebuilt from the thread on each
//! call: the thread is the only state.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    ExecContext, ExecError, Executor, RequestShape,
    support::{check_step_counts, memory_error, parse_request, record_turn},
};
use crate::conversation::{Role, Thread, Turn};

/// Plans this long or longer get a reflection prompt in their first steps.
const DEEP_PLAN_STEPS: u64 = 5;

pub const REQUEST: RequestShape = RequestShape::of::<StepRequest>();

/// The fields of a planner request the executor reads (the schema checked the rest).
#[derive(Deserialize)]
struct StepRequest {
    step: String,
    step_number: u64,
    total_steps: u64,
    next_step_required: bool,
    #[serde(default)]
    is_step_revision: bool,
    revises_step_number: Option<u64>,
    #[serde(default)]
    is_branch_point: bool,
    branch_from_step: Option<u64>,
    branch_id: Option<String>,
    #[serde(default)]
    more_steps_needed: bool,
    continuation_id: Option<String>,
}

#[derive(Debug, Default)]
struct Plan {
    /// Main line: step number -> text.
    steps: BTreeMap<u64, String>,
    /// Branch id -> (step it branches from, its steps).
    branches: BTreeMap<String, (u64, BTreeMap<u64, String>)>,
    revisions: u64,
}

impl Plan {
    /// Replays the current plan's steps from the thread (since its last fresh step 1).
    fn from_thread(thread: &Thread) -> Self {
        let steps: Vec<StepRequest> = thread
            .turns
            .iter()
            .filter(|turn| turn.role == Role::User && turn.mode == "planner")
            .filter_map(|turn| turn.data.clone())
            .filter_map(|data| serde_json::from_value(data).ok())
            .collect();
        let start = steps
            .iter()
            .rposition(|s| s.step_number == 1 && !s.is_step_revision && s.branch_id.is_none())
            .unwrap_or(0);
        let mut plan = Plan::default();
        for step in &steps[start..] {
            // Recorded steps were valid when recorded.
            let _ = record_step(&mut plan, step);
        }
        plan
    }
}

pub struct Planner;

#[async_trait]
impl Executor for Planner {
    async fn execute(&self, request: Value, context: &ExecContext<'_>) -> Result<Value, ExecError> {
        let data = request.clone();
        let request: StepRequest = parse_request(request)?;
        check_step_counts(request.step_number, request.total_steps)?;
        if request.step.trim().is_empty() {
            return Err(ExecError::new(
                "empty_step",
                "step is empty: describe this planning step",
            ));
        }
        let memory = &context.services.memory;
        let mut plan = match &request.continuation_id {
            Some(id) => Plan::from_thread(&memory.get(id).await.map_err(memory_error)?),
            None => Plan::default(),
        };
        if request.step_number == 1 && !request.is_step_revision && request.branch_id.is_none() {
            plan = Plan::default();
        }
        // Check the step against the plan before it is recorded.
        let placement = record_step(&mut plan, &request)?;
        let turn = Turn::user(
            "planner",
            format!("Plan step {}: {}", request.step_number, request.step),
        )
        .with_data(data);
        let id = record_turn(context, request.continuation_id.as_deref(), turn).await?;

        let complete = !request.next_step_required && !request.more_steps_needed;
        let mut reply = json!({
            "status": if complete { "planning_complete" } else { "planning_in_progress" },
            "continuation_id": id,
            "step_number": request.step_number,
            "total_steps": request.total_steps.max(request.step_number),
            "recorded_as": placement,
            "steps_in_plan": plan.steps.len(),
            "branches": plan.branches.keys().collect::<Vec<_>>(),
            "next_step_required": !complete,
        });
        if complete {
            reply["plan"] = render_plan(&plan);
            reply["guidance"] = json!(
                "The plan is complete. Present it to the user as an ordered list, mention any branches as alternatives, and start on step 1 only once they agree."
            );
        } else {
            reply["guidance"] = json!(next_step_guidance(&request));
        }
        Ok(reply)
    }
}

/// Files the step in the main line, a branch, or over an earlier step.
fn record_step(plan: &mut Plan, request: &StepRequest) -> Result<&'static str, ExecError> {
    let text = request.step.clone();
    if request.is_step_revision {
        let target = request.revises_step_number.ok_or_else(|| {
            ExecError::new(
                "missing_field",
                "is_step_revision is true but revises_step_number is missing",
            )
        })?;
        let line = match &request.branch_id {
            Some(branch) => match plan.branches.get_mut(branch) {
                Some((_, steps)) => steps,
                None => return Err(unknown_branch(branch, plan)),
            },
            None => &mut plan.steps,
        };
        if !line.contains_key(&target) {
            return Err(ExecError::new(
                "unknown_step",
                format!("cannot revise step {target}: it has not been recorded"),
            ));
        }
        line.insert(target, text);
        plan.revisions += 1;
        return Ok("revision");
    }
    if request.is_branch_point || request.branch_id.is_some() {
        let branch = request.branch_id.clone().ok_or_else(|| {
            ExecError::new(
                "missing_field",
                "is_branch_point is true but branch_id is missing",
            )
        })?;
        let from = request
            .branch_from_step
            .unwrap_or(request.step_number.saturating_sub(1));
        let (_, steps) = plan
            .branches
            .entry(branch)
            .or_insert_with(|| (from, BTreeMap::new()));
        steps.insert(request.step_number, text);
        return Ok("branch");
    }
    plan.steps.insert(request.step_number, text);
    Ok("main")
}

fn unknown_branch(branch: &str, plan: &Plan) -> ExecError {
    ExecError::new(
        "unknown_branch",
        format!("no branch named {branch:?} in this plan"),
    )
    .with(
        "branches",
        plan.branches.keys().cloned().collect::<Vec<_>>(),
    )
}

fn next_step_guidance(request: &StepRequest) -> String {
    let next = request.step_number + 1;
    if request.total_steps >= DEEP_PLAN_STEPS && request.step_number <= 2 {
        format!(
            "Before step {next}, stop and reflect: is the scope right, what are the riskiest parts, which steps depend on others, and is there an alternative approach worth a branch? Then call again with step_number {next}."
        )
    } else {
        format!(
            "Record step {next} next. Revise an earlier step with is_step_revision and revises_step_number, or explore an alternative with is_branch_point and branch_id."
        )
    }
}

fn render_plan(plan: &Plan) -> Value {
    let branches: serde_json::Map<String, Value> = plan
        .branches
        .iter()
        .map(|(id, (from, steps))| {
            (
                id.clone(),
                json!({"from_step": from, "steps": steps.values().collect::<Vec<_>>()}),
            )
        })
        .collect();
    json!({
        "steps": plan.steps.values().collect::<Vec<_>>(),
        "branches": branches,
        "revisions": plan.revisions,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(number: u64, extra: Value) -> StepRequest {
        let mut base = json!({
            "step": format!("step {number}"), "step_number": number,
            "total_steps": 3, "next_step_required": true
        });
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn records_main_line_revisions_and_branches() {
        let mut plan = Plan::default();
        assert_eq!(record_step(&mut plan, &step(1, json!({}))).unwrap(), "main");
        assert_eq!(record_step(&mut plan, &step(2, json!({}))).unwrap(), "main");
        let revision = step(
            3,
            json!({"is_step_revision": true, "revises_step_number": 1}),
        );
        assert_eq!(record_step(&mut plan, &revision).unwrap(), "revision");
        assert_eq!(plan.steps[&1], "step 3");
        let branch = step(
            3,
            json!({"is_branch_point": true, "branch_id": "alt", "branch_from_step": 2}),
        );
        assert_eq!(record_step(&mut plan, &branch).unwrap(), "branch");
        assert_eq!(plan.branches["alt"].0, 2);
        let rendered = render_plan(&plan);
        assert_eq!(rendered["steps"], json!(["step 3", "step 2"]));
    }

    #[test]
    fn rejects_revising_an_unknown_step_or_branch() {
        let mut plan = Plan::default();
        let revision = step(
            2,
            json!({"is_step_revision": true, "revises_step_number": 7}),
        );
        assert_eq!(
            record_step(&mut plan, &revision).unwrap_err().kind,
            "unknown_step"
        );
        let missing = step(2, json!({"is_step_revision": true}));
        assert_eq!(
            record_step(&mut plan, &missing).unwrap_err().kind,
            "missing_field"
        );
        let ghost = step(
            2,
            json!({"is_step_revision": true, "revises_step_number": 1, "branch_id": "x"}),
        );
        assert_eq!(
            record_step(&mut plan, &ghost).unwrap_err().kind,
            "unknown_branch"
        );
    }
}
