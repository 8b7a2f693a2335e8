//! The routing and bounds of flow-back requests, with fake clients.

use std::sync::atomic::AtomicBool;

use super::*;
use crate::call::FlowBackLoad;

/// A client whose answers name `label`; `ended` marks the end of what it
/// stands for (a call, or the session); with `silent` it never answers.
struct Fake {
    session: usize,
    label: &'static str,
    ended: AtomicBool,
    silent: bool,
    load: Arc<FlowBackLoad>,
}

#[async_trait::async_trait]
impl ClientRequests for Fake {
    fn session(&self) -> usize {
        self.session
    }
    fn load(&self) -> &FlowBackLoad {
        &self.load
    }
    fn can(&self, _ask: Ask) -> bool {
        true
    }
    fn is_closed(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }
    async fn elicit(&self, _params: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        if self.silent {
            std::future::pending::<()>().await;
        }
        Err(ErrorData::internal_error(self.label, None))
    }
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(ErrorData::internal_error(self.label, None))
    }
    async fn list_roots(&self) -> Result<ListRootsResult, ErrorData> {
        Ok(
            serde_json::from_value(json!({"roots": [{"uri": format!("file:///{}", self.label)}]}))
                .unwrap(),
        )
    }
}

fn fake(session: usize, label: &'static str) -> Arc<dyn ClientRequests> {
    Arc::new(Fake {
        session,
        label,
        ended: AtomicBool::new(false),
        silent: false,
        load: Arc::default(),
    })
}

fn silent(session: usize, load: &Arc<FlowBackLoad>) -> Arc<dyn ClientRequests> {
    Arc::new(Fake {
        session,
        label: "silent",
        ended: AtomicBool::new(false),
        silent: true,
        load: load.clone(),
    })
}

fn form() -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form", "message": "name?",
        "requestedSchema": {"type": "object", "properties": {}}
    }))
    .unwrap()
}

fn from(origin: Origin) -> Asked {
    Asked {
        origin,
        stop: CancellationToken::new(),
    }
}

/// Who answered an elicitation (the fake's label), or the refusal.
async fn elicited(callers: &Callers, origin: Origin) -> String {
    match callers.elicit("fs", form(), from(origin)).await {
        Ok(_) => unreachable!("the fakes answer with an error naming themselves"),
        Err(error) => error.message.into_owned(),
    }
}

#[tokio::test]
async fn roots_asked_during_a_call_go_to_the_session_not_the_call() {
    // A session number no other test uses: the session list is global.
    let session = usize::MAX - 17;
    let session_client = fake(session, "session");
    ROOT_SESSIONS
        .lock()
        .unwrap()
        .push(Arc::downgrade(&session_client));
    let callers = Callers::default();
    let call_client = fake(session, "call");
    let _call = callers.enter(Some(&call_client));

    let roots = callers
        .list_roots("fs", from(Origin::Unknown))
        .await
        .unwrap();
    assert_eq!(roots.roots[0].uri, "file:///session", "{roots:?}");
    // Requests made for the call itself still go to the call.
    assert_eq!(elicited(&callers, Origin::Unknown).await, "call");
}

#[tokio::test]
async fn after_another_sessions_call_ended_a_stdio_request_is_refused() {
    let callers = Callers::default();
    let (a, b) = (fake(1, "A"), fake(2, "B"));
    let call_a = callers.enter(Some(&a));
    let call_b = callers.enter(Some(&b));
    assert!(
        elicited(&callers, Origin::Unknown)
            .await
            .contains("several client sessions")
    );
    // A's call returns; the server's next request may still be A's.
    drop(call_a);
    let refused = elicited(&callers, Origin::Unknown).await;
    assert!(refused.contains("may be a late one"), "{refused}");
    // Another call of B that began with B alone is B's.
    drop(call_b);
    let _again = callers.enter(Some(&b));
    assert_eq!(elicited(&callers, Origin::Unknown).await, "B");
}

#[tokio::test]
async fn a_request_that_outruns_its_calls_noting_of_the_id_waits_for_it() {
    let callers = Callers::default();
    let a = fake(1, "A");
    let call_a = callers.enter(Some(&a));
    // The request is on its way and the server already asks on its id.
    let send = call_a.sending();
    let asking = callers.clone();
    let asked =
        tokio::spawn(async move { elicited(&asking, Origin::Call(RequestId::Number(9))).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!asked.is_finished(), "refused before the call noted its id");
    send.tie(RequestId::Number(9));
    assert_eq!(asked.await.unwrap(), "A");
    // A send that failed before its id was known leaves nothing to wait for.
    drop(call_a.sending());
    assert!(
        callers
            .calls()
            .iter()
            .all(|caller| caller.untied_sends == 0)
    );
}

#[tokio::test]
async fn an_http_request_goes_to_its_own_call_and_not_after_it() {
    let callers = Callers::default();
    let (a, b) = (fake(1, "A"), fake(2, "B"));
    let call_a = callers.enter(Some(&a));
    let call_b = callers.enter(Some(&b));
    call_a.sending().tie(RequestId::Number(7));
    call_b.sending().tie(RequestId::Number(8));
    assert_eq!(
        elicited(&callers, Origin::Call(RequestId::Number(7))).await,
        "A"
    );
    assert_eq!(
        elicited(&callers, Origin::Call(RequestId::Number(8))).await,
        "B"
    );
    drop(call_a);
    let refused = elicited(&callers, Origin::Call(RequestId::Number(7))).await;
    assert!(refused.contains("has ended"), "{refused}");
    let outside = elicited(&callers, Origin::Outside).await;
    assert!(outside.contains("outside any call"), "{outside}");
}

#[tokio::test]
async fn a_call_has_at_most_its_share_waiting_and_in_all() {
    let callers = Callers::default();
    let load = Arc::default();
    let client = silent(3, &load);
    let call = callers.enter(Some(&client));
    let mut waiting = Vec::new();
    for _ in 0..CALL_WAITING {
        let callers = callers.clone();
        waiting.push(tokio::spawn(async move {
            elicited(&callers, Origin::Unknown).await
        }));
    }
    // Polled until all of them wait on the client.
    while callers.calls()[0].waiting < CALL_WAITING {
        tokio::task::yield_now().await;
    }
    let refused = elicited(&callers, Origin::Unknown).await;
    assert!(refused.contains("at most 8 at once"), "{refused}");
    // The call ends: its requests stop waiting, and say why.
    drop(call);
    for task in waiting {
        let ended = task.await.unwrap();
        assert!(
            ended.contains("ended before the client answered"),
            "{ended}"
        );
    }
    assert_eq!(load.waiting(), 0, "each request gave its place back");

    let answering = fake(4, "answered");
    let _call = callers.enter(Some(&answering));
    for _ in 0..CALL_TOTAL {
        assert_eq!(elicited(&callers, Origin::Unknown).await, "answered");
    }
    let refused = elicited(&callers, Origin::Unknown).await;
    assert!(refused.contains("at most 100 per call"), "{refused}");
}

#[tokio::test]
async fn a_session_has_at_most_its_share_waiting_across_calls() {
    let load: Arc<FlowBackLoad> = Arc::default();
    let mut tasks = Vec::new();
    let mut guards = Vec::new();
    // Each call on its own upstream, all of one session.
    for _ in 0..SESSION_WAITING / CALL_WAITING {
        let callers = Callers::default();
        guards.push(callers.enter(Some(&silent(5, &load))));
        for _ in 0..CALL_WAITING {
            let callers = callers.clone();
            tasks.push(tokio::spawn(async move {
                elicited(&callers, Origin::Unknown).await
            }));
        }
    }
    while load.waiting() < SESSION_WAITING {
        tokio::task::yield_now().await;
    }
    let callers = Callers::default();
    let _call = callers.enter(Some(&silent(5, &load)));
    let refused = elicited(&callers, Origin::Unknown).await;
    assert!(refused.contains("client session"), "{refused}");
    drop(guards);
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(load.waiting(), 0);
}

#[tokio::test]
async fn a_request_outside_any_call_stops_when_the_server_cancels_it() {
    let session = usize::MAX - 18;
    let load = Arc::default();
    let client = silent(session, &load);
    let callers = Callers::default();
    // Only the calls' sessions matter for elicitation: none is in flight.
    let refused = elicited(&callers, Origin::Unknown).await;
    assert!(refused.contains("no call"), "{refused}");
    let _call = callers.enter(Some(&client));
    let stop = CancellationToken::new();
    let asked = Asked {
        origin: Origin::Unknown,
        stop: stop.clone(),
    };
    let waiting = tokio::spawn({
        let callers = callers.clone();
        async move { callers.elicit("fs", form(), asked).await }
    });
    stop.cancel();
    let error = waiting.await.unwrap().unwrap_err();
    assert!(error.message.contains("server cancelled"), "{error:?}");
}

#[tokio::test]
async fn a_cancelled_calls_window_keeps_stdio_requests_from_other_sessions() {
    let callers = Callers::new(Duration::from_millis(300));
    let (a, b) = (fake(1, "A"), fake(2, "B"));
    // A's call ends without the server's answer (cancelled) while nothing
    // else runs; B's call starts after it.
    drop(callers.enter(Some(&a)));
    let call_b = callers.enter(Some(&b));
    let refused = elicited(&callers, Origin::Unknown).await;
    assert!(
        refused.contains("without its answer") && refused.contains("timeout"),
        "{refused}"
    );
    call_b.answered();
    drop(call_b);
    // A's own later call is A's: the window guards other sessions only.
    let call_a = callers.enter(Some(&a));
    assert_eq!(elicited(&callers, Origin::Unknown).await, "A");
    drop(call_a);
    // Once the cancelled call's timeout has passed, B is asked again.
    tokio::time::sleep(Duration::from_millis(350)).await;
    let _call_b = callers.enter(Some(&b));
    assert_eq!(elicited(&callers, Origin::Unknown).await, "B");
    // A call the server answered leaves no window.
    let answered = callers.enter(Some(&a));
    drop(_call_b);
    answered.answered();
    drop(answered);
    let _call_b = callers.enter(Some(&b));
    assert_eq!(elicited(&callers, Origin::Unknown).await, "B");
}
