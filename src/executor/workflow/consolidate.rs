//! One investigation's steps folded into a single picture.
//!
//! The steps are read back from the thread rather than kept on the side, so
//! the thread stays the only state and a continued thread sees everything.

use serde_json::{Value, json};

use crate::conversation::{Role, Thread};

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Consolidated {
    /// (step number, what was done, what was found), in order.
    pub steps: Vec<(u64, String, String)>,
    pub files_checked: Vec<String>,
    pub relevant_files: Vec<String>,
    pub relevant_context: Vec<String>,
    /// Issue objects, deduplicated by description.
    pub issues: Vec<Value>,
    /// (step number, confidence) as it moved.
    pub confidence_trail: Vec<(u64, String)>,
    pub hypothesis: Option<String>,
}

fn push_unique(list: &mut Vec<String>, values: Option<&Value>) {
    for value in values.and_then(Value::as_array).into_iter().flatten() {
        if let Some(text) = value.as_str()
            && !list.iter().any(|known| known == text)
        {
            list.push(text.to_owned());
        }
    }
}

impl Consolidated {
    /// The current investigation of `mode` in `thread`: its steps since the
    /// most recent step 1 (a thread may hold an earlier, finished one).
    pub fn from_thread(thread: &Thread, mode: &str) -> Self {
        let steps: Vec<&Value> = thread
            .turns
            .iter()
            .filter(|turn| turn.role == Role::User && turn.mode == mode)
            .filter_map(|turn| turn.data.as_ref())
            .collect();
        let start = steps
            .iter()
            .rposition(|data| data["step_number"].as_u64() == Some(1))
            .unwrap_or(0);
        let mut out = Consolidated::default();
        for data in &steps[start..] {
            let number = data["step_number"].as_u64().unwrap_or(0);
            let text = |key: &str| data[key].as_str().unwrap_or_default().to_owned();
            out.steps.push((number, text("step"), text("findings")));
            push_unique(&mut out.files_checked, data.get("files_checked"));
            push_unique(&mut out.relevant_files, data.get("relevant_files"));
            push_unique(&mut out.relevant_context, data.get("relevant_context"));
            for issue in data["issues_found"].as_array().into_iter().flatten() {
                let seen = out
                    .issues
                    .iter()
                    .any(|known| known["description"] == issue["description"]);
                if !seen {
                    out.issues.push(issue.clone());
                }
            }
            if let Some(confidence) = data["confidence"].as_str() {
                out.confidence_trail.push((number, confidence.to_owned()));
            }
            if let Some(hypothesis) = data["hypothesis"].as_str() {
                out.hypothesis = Some(hypothesis.to_owned());
            }
        }
        out
    }

    /// The short status shown while the investigation goes on.
    pub fn status(&self) -> Value {
        json!({
            "steps_recorded": self.steps.len(),
            "files_checked": self.files_checked.len(),
            "relevant_files": self.relevant_files.len(),
            "issues_found": self.issues.len(),
            "confidence": self.confidence_trail.last().map(|(_, c)| c.as_str()),
        })
    }

    /// The full picture returned on the final step.
    pub fn report(&self) -> Value {
        json!({
            "steps": self.steps.iter().map(|(number, step, findings)| {
                json!({"step_number": number, "step": step, "findings": findings})
            }).collect::<Vec<_>>(),
            "files_checked": self.files_checked,
            "relevant_files": self.relevant_files,
            "relevant_context": self.relevant_context,
            "issues_found": self.issues,
            "confidence_trail": self.confidence_trail.iter().map(|(number, confidence)| {
                json!({"step_number": number, "confidence": confidence})
            }).collect::<Vec<_>>(),
            "hypothesis": self.hypothesis,
        })
    }

    /// The findings as Markdown for the expert model.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for (number, step, findings) in &self.steps {
            out.push_str(&format!(
                "### Step {number}\n{step}\n\nFindings: {findings}\n\n"
            ));
        }
        let list = |title: &str, items: &[String]| {
            if items.is_empty() {
                String::new()
            } else {
                format!("### {title}\n- {}\n\n", items.join("\n- "))
            }
        };
        out.push_str(&list("Files examined", &self.files_checked));
        out.push_str(&list("Relevant files", &self.relevant_files));
        out.push_str(&list("Relevant code", &self.relevant_context));
        if !self.issues.is_empty() {
            out.push_str("### Issues found\n");
            for issue in &self.issues {
                out.push_str(&format!(
                    "- [{}] {}\n",
                    issue["severity"].as_str().unwrap_or("unrated"),
                    issue["description"].as_str().unwrap_or_default()
                ));
            }
            out.push('\n');
        }
        if let Some(hypothesis) = &self.hypothesis {
            out.push_str(&format!("### Current hypothesis\n{hypothesis}\n\n"));
        }
        if let Some((_, confidence)) = self.confidence_trail.last() {
            out.push_str(&format!("### Confidence\n{confidence}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Turn;

    fn thread(turns: Vec<Turn>) -> Thread {
        let now = std::time::SystemTime::now();
        Thread {
            id: "t".into(),
            created: now,
            updated: now,
            turns,
        }
    }

    fn step(mode: &str, data: Value) -> Turn {
        Turn::user(mode, "step").with_data(data)
    }

    #[test]
    fn folds_steps_and_starts_over_at_step_one() {
        let t = thread(vec![
            step(
                "debug",
                json!({"step_number": 1, "step": "old", "findings": "x"}),
            ),
            step(
                "debug",
                json!({"step_number": 1, "step": "a", "findings": "f1",
                "files_checked": ["/a"], "relevant_files": ["/a"], "confidence": "low",
                "issues_found": [{"severity": "high", "description": "leak"}]}),
            ),
            Turn::assistant("debug", "pause"),
            step("chat", json!({"step_number": 2, "step": "other mode"})),
            step(
                "debug",
                json!({"step_number": 2, "step": "b", "findings": "f2",
                "files_checked": ["/a", "/b"], "confidence": "high", "hypothesis": "h",
                "issues_found": [{"severity": "high", "description": "leak"}]}),
            ),
        ]);
        let c = Consolidated::from_thread(&t, "debug");
        assert_eq!(c.steps.len(), 2);
        assert_eq!(c.steps[0].1, "a");
        assert_eq!(c.files_checked, ["/a", "/b"]);
        assert_eq!(c.issues.len(), 1);
        assert_eq!(c.confidence_trail, [(1, "low".into()), (2, "high".into())]);
        assert_eq!(c.hypothesis.as_deref(), Some("h"));
        assert_eq!(c.status()["confidence"], "high");
        let markdown = c.to_markdown();
        assert!(markdown.contains("[high] leak") && markdown.contains("### Step 2"));
    }
}
