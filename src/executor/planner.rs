//! `planner`: builds a plan one step per call, with revisions and branches.
//!
//! Each plan lives under a `continuation_id` that the first step returns; later
//! steps name it to add to the same plan. Plans are kept in memory, bounded by
//! [`MAX_PLANS`] (the least recently touched plan is dropped first).

use std::{
    collections::{BTreeMap, HashMap},
    sync::Mutex,
    time::Instant,
};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ExecContext, ExecError, Executor};

/// How many plans one process keeps before dropping the stalest.
pub const MAX_PLANS: usize = 1024;
/// Plans this long or longer get a reflection prompt in their first steps.
const DEEP_PLAN_STEPS: u64 = 5;

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
    touched: Option<Instant>,
}

#[derive(Default)]
pub struct Planner {
    plans: Mutex<HashMap<String, Plan>>,
}

#[async_trait]
impl Executor for Planner {
    async fn execute(&self, request: Value, _: &ExecContext<'_>) -> Result<Value, ExecError> {
        let request: StepRequest = serde_json::from_value(request)
            .map_err(|e| ExecError::new("invalid_request", e.to_string()))?;
        if request.step.trim().is_empty() {
            return Err(ExecError::new(
                "empty_step",
                "step is empty: describe this planning step",
            ));
        }
        let mut plans = self
            .plans
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let id = match &request.continuation_id {
            Some(id) if plans.contains_key(id) => id.clone(),
            Some(id) => {
                return Err(ExecError::new(
                    "unknown_continuation",
                    format!(
                        "no plan has continuation_id {id:?} (it may have expired); omit continuation_id to start a new plan"
                    ),
                ));
            }
            None => {
                if plans.len() >= MAX_PLANS {
                    evict_stalest(&mut plans);
                }
                let id = uuid::Uuid::new_v4().to_string();
                plans.insert(id.clone(), Plan::default());
                id
            }
        };
        let plan = plans.get_mut(&id).expect("plan inserted or found above");
        let placement = record_step(plan, &request)?;
        plan.touched = Some(Instant::now());

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
            reply["plan"] = render_plan(plan);
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

fn evict_stalest(plans: &mut HashMap<String, Plan>) {
    if let Some(stalest) = plans
        .iter()
        .min_by_key(|(_, plan)| plan.touched)
        .map(|(id, _)| id.clone())
    {
        plans.remove(&stalest);
    }
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

    #[test]
    fn eviction_drops_the_stalest_plan() {
        let mut plans = HashMap::new();
        let old = Instant::now();
        plans.insert(
            "old".to_owned(),
            Plan {
                touched: Some(old),
                ..Plan::default()
            },
        );
        plans.insert(
            "new".to_owned(),
            Plan {
                touched: Some(old + std::time::Duration::from_secs(1)),
                ..Plan::default()
            },
        );
        evict_stalest(&mut plans);
        assert!(plans.contains_key("new") && !plans.contains_key("old"));
    }
}
