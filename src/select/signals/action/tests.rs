//! The action classes: requests, tool names, questions and negations.

use super::*;

#[test]
fn questions_are_told_from_requests_to_act() {
    for question in [
        "what branch am I on at the moment",
        "which branches exist on the remote",
        "show me the last five commits",
        "is there a file called notes.md",
        "What's in the staging area?",
        "the weather in Oslo?",
        "Would deleting redis key session:8812 break anything?",
        "will dropping the orders index slow down checkout?",
        "can this branch be deleted safely?",
        "the HW team is gone \u{2014} can it be archived?",
    ] {
        assert!(is_question(question), "{question}");
    }
    for request in [
        "commit my changes with the message fix typo",
        "create a branch called feature-x",
        "can you switch to the main branch?",
        "please store that Alice is a person?",
        "could u delete key session:8812?",
        "may I get the latest deploy logs?",
        "we disbanded the hackweek team (HW) \u{2014} can you archive it in linear?",
        "the old site is dead - could you delete it?",
        "",
    ] {
        assert!(!is_question(request), "{request}");
    }
}

#[test]
fn the_verb_counts_and_the_object_does_not() {
    // "stage" adds; "staged" names what is there.
    assert!(Actions::of_request("stage the file src/main.rs").intersects(Actions::CREATE));
    assert!(!Actions::of_request("show the staged diff").intersects(Actions::CREATE));
    // Making a commit asks to commit; the noun alone does not.
    assert!(Actions::of_request("make a commit of what I staged").intersects(Actions::COMMIT));
    assert!(!Actions::of_request("make sure the next commit is small").intersects(Actions::COMMIT));
    // A participle in a name is its object: this diff does not unstage.
    assert!(!Actions::of_tool("git_diff_unstaged", "").intersects(Actions::RESET));
    assert!(Actions::of_tool("git_reset", "").intersects(Actions::RESET));
    // Creating a file writes one.
    assert!(
        Actions::of_request("create a file notes.md")
            .intersects(Actions::of_tool("write_file", ""))
    );
}

#[test]
fn an_imperative_in_a_verb_of_no_class_asks_to_act() {
    for request in [
        "star the repository octo/app",
        "fork octo/web into my account",
        "jot down that Maria loves jazz",
        "please land PR 12",
        "I want to order a custom sculpture",
    ] {
        assert!(opens_with_unclassified_verb(request), "{request}");
    }
    for request in [
        "show me the staged diff",
        "the diff of my branch, please",
        "what do you know about Maria?",
        "look up the entity Alice",
        "calculate the entropy change",
        "my notes from yesterday",
        "",
    ] {
        assert!(!opens_with_unclassified_verb(request), "{request}");
    }
}

#[test]
fn sentences_that_all_ask_to_be_told_make_a_question() {
    assert!(every_sentence_asks_to_be_told(
        "Thinking about deleting the 'legacy' label in Linear. Would any saved views break? Just show me our saved views for now."
    ));
    assert!(every_sentence_asks_to_be_told(
        "Don't merge it yet. Which checks failed on PR 12?"
    ));
    for request in [
        "Delete the legacy label. Which views used it?",
        "I want to order a custom bronze sculpture. What materials are there?",
        "which views use the legacy label?",
        "",
    ] {
        assert!(!every_sentence_asks_to_be_told(request), "{request}");
    }
}

#[test]
fn a_wish_followed_by_a_question_of_its_own_is_told_apart() {
    for request in [
        "I want to delete the STRIPE_KEY secret from worker billing \u{2014} which secrets does it have right now?",
        "I want to order a custom bronze sculpture of a horse. What material options are available?",
        "we need to drop the orders table; is anything still reading it?",
    ] {
        assert!(wish_then_question(request), "{request}");
    }
    for request in [
        "I need a QR code for my contact information. Can you help?",
        "which secrets does the billing worker have?",
        "delete the secret STRIPE_KEY. What's left?",
        "I want to know which branch I am on?",
        "I want to delete the secret STRIPE_KEY",
        "",
    ] {
        assert!(!wish_then_question(request), "{request}");
    }
}

#[test]
fn a_wish_to_act_is_no_question_even_when_a_question_follows() {
    for request in [
        "I want to order a custom bronze sculpture of a horse. What material options are available?",
        "I need a QR code for my contact information. Can you help?",
        "Greetings! I'd like to book a table. Is 8pm free?",
    ] {
        assert!(!is_question(request), "{request}");
    }
    assert!(is_question("I want to know which branch I am on?"));
    assert!(is_question(
        "What is the cheapest selling price in the store?"
    ));
}

#[test]
fn only_the_verb_of_a_name_is_its_action() {
    // "store" as a namespace or a noun, "change" as an object.
    for (name, description) in [
        ("store.find_nearby", "Locate nearby stores"),
        (
            "video_games.store_price",
            "Fetches the selling price of a game in a store",
        ),
        ("calculate_entropy_change", "Calculate the entropy change"),
    ] {
        assert!(
            !Actions::main_of_tool(name, description).intersects(Actions::CHANGING),
            "{name}"
        );
    }
    for (name, description) in [
        ("sculpture.create_custom", "Order a custom sculpture"),
        ("calendar_event_create", "Creates a new calendar event"),
        ("git_commit", "Records changes to the repository"),
    ] {
        assert!(
            Actions::main_of_tool(name, description).intersects(Actions::CHANGING),
            "{name}"
        );
    }
}

/// Whether a tool so named and described changes state by its verb.
fn changing(name: &str, description: &str) -> bool {
    Actions::main_of_tool(name, description).intersects(Actions::CHANGING)
}

#[test]
fn verbs_outside_the_action_classes_change_state_in_tool_names() {
    for (name, description) in [
        ("github__star_repository", "Star a GitHub repository"),
        ("set_issue_fields", "Set custom field values on an issue"),
        ("browser_close", "Close the page"),
        ("assign_copilot_to_issue", "Assign Copilot to an issue"),
        ("huly__start_timer", "Start a timer"),
        ("secret_put", "Store a secret"),
    ] {
        assert!(changing(name, description), "{name}");
    }
    // A noun as often as a verb, followed by what the tool does; and
    // a description that opens with reading.
    for (name, description) in [
        ("tag_list", "Lists the tags of a repository"),
        ("order_status", "The status of an order"),
        ("comment_get", "One comment"),
        ("book_info", "Gets the details of a book"),
    ] {
        assert!(!changing(name, description), "{name}");
    }
    // The ranking's order reads the action classes alone.
    let star = Actions::main_of_tool_with("star_repository", "Star a repository", false);
    assert!(!star.intersects(Actions::CHANGING));
    // A request is not read for them: "set up" or "start by" asks for
    // nothing to change.
    assert!(!Actions::of_request("start by showing me the diff").intersects(Actions::CHANGING));
}

#[test]
fn repository_verbs_change_state() {
    let commit = Actions::of_tool("git_commit", "Records changes to the repository");
    let checkout = Actions::of_tool("git_checkout", "Switches branches");
    let status = Actions::of_tool("git_status", "Shows the working tree status");
    assert!(commit.intersects(Actions::CHANGING));
    assert!(checkout.intersects(Actions::CHANGING));
    assert!(!status.intersects(Actions::CHANGING));
    // A diff of unstaged changes compares; it does not reset.
    let diff = Actions::main_of_tool("git__git_diff_unstaged", "Shows changes");
    assert!(!diff.intersects(Actions::CHANGING));
    assert!(
        Actions::main_of_tool("git__git_create_branch", "Creates a new branch")
            .intersects(Actions::CHANGING)
    );
    // Only tools are read for repository verbs: in a request "commit"
    // is as often the noun.
    assert!(
        !Actions::of_request("include the new file in the next commit").intersects(Actions::COMMIT)
    );
}

#[test]
fn synonyms_of_a_verb_share_its_class() {
    for request in [
        "store in the knowledge graph that Alice is a person",
        "save a note that the meeting moved",
        "record that Bob works at Acme",
        "please add Carol as a contact",
    ] {
        assert!(
            Actions::of_request(request).intersects(Actions::CREATE),
            "{request}"
        );
    }
    assert!(
        Actions::of_tool("create_entities", "Create multiple new entities")
            .intersects(Actions::CREATE)
    );
}

#[test]
fn what_changed_asks_for_the_state_and_change_asks_for_an_update() {
    let changed = Actions::of_request("what changed in my repo?");
    assert!(changed.intersects(Actions::STATUS));
    assert!(!changed.intersects(Actions::UPDATE));
    let change = Actions::of_request("change the port to 8080");
    assert!(change.intersects(Actions::UPDATE));
    assert!(!change.intersects(Actions::STATUS));
    assert!(Actions::of_tool("git_status", "Shows the working tree status").intersects(changed));
}

#[test]
fn a_destructive_tool_is_licensed_only_by_its_own_action() {
    let delete = Actions::of_tool("delete_entities", "Delete multiple entities");
    assert!(!Actions::of_request("store that Alice is a person").licenses(delete));
    assert!(Actions::of_request("remove Alice from the graph").licenses(delete));
    assert!(Actions::of_request("please erase the entity Bob").licenses(delete));
    let reset = Actions::of_tool("git_reset", "Unstages all staged changes");
    assert!(!Actions::of_request("what changed in my repo?").licenses(reset));
    assert!(Actions::of_request("unstage everything").licenses(reset));
    // A tool whose name says nothing needs a destroying verb.
    assert!(!Actions::of_request("tell me about the weather").licenses(Actions::NONE));
    assert!(Actions::of_request("wipe it").licenses(Actions::NONE));
}

#[test]
fn opening_or_getting_something_new_makes_it() {
    for request in [
        "open a new issue in acme/web: dark mode resets",
        "open new tab with the docs",
        "get a new API key for the staging worker",
    ] {
        let (main, _) = Actions::of_request_main(request);
        assert_eq!(main, Actions::CREATE, "{request}");
    }
    for request in ["open issue 12 in acme/web", "get the newest release"] {
        let (main, _) = Actions::of_request_main(request);
        assert!(main.intersects(Actions::READ), "{request}");
    }
}

#[test]
fn the_first_action_word_is_the_main_action() {
    let (main, all) = Actions::of_request_main("list all entities and relations you have stored");
    assert_eq!(main, Actions::LIST);
    assert!(all.intersects(Actions::CREATE));
    let (main, _) = Actions::of_request_main("hello there, nothing to do");
    assert!(main.is_empty());
    assert!(Actions::of_request("read https://example.com/a for me").intersects(Actions::FETCH));
}

#[test]
fn words_split_identifiers_and_inflections_meet() {
    assert_eq!(
        Actions::of_tool("deleteEntities", ""),
        Actions::of_tool("delete-entities", "")
    );
    assert!(Actions::of_request("I deleted it, then stored it again").intersects(Actions::DELETE));
    assert!(Actions::of_request("I deleted it, then stored it again").intersects(Actions::CREATE));
    assert!(Actions::of_request("hello there").is_empty());
}

#[test]
fn archiving_changes_state_and_ruling_it_out_rules_out_no_update() {
    assert!(Actions::of_request("archive milestone ms_12").intersects(Actions::CHANGING));
    assert!(Actions::of_request("unarchive the #design channel").intersects(Actions::CHANGING));
    let negated = Actions::negated_in_request("delete project update b77e09c1, not archive");
    assert!(negated.intersects(Actions::ARCHIVE));
    assert!(!negated.intersects(Actions::UPDATE));
}

#[test]
fn revoking_access_deletes_it() {
    let asked = Actions::of_request("revoke ben's access to my outlook calendar");
    assert!(asked.intersects(Actions::DELETE));
    assert!(asked.licenses(Actions::DELETE));
}

#[test]
fn bringing_back_what_was_archived_is_not_archiving_it() {
    let (main, all) = Actions::of_request_main("restore the archived release 3.13.1");
    assert_eq!(main, Actions::RESTORE);
    assert!(all.intersects(Actions::ARCHIVE));
    assert_eq!(
        Actions::main_of_tool("unarchiveRelease", ""),
        Actions::RESTORE
    );
    let archiving = Actions::main_of_tool("archiveRelease", "");
    assert!(archiving.intersects(Actions::ARCHIVE) && !archiving.intersects(Actions::RESTORE));
    assert!(Actions::of_request("unarchive the Q3 initiative").intersects(Actions::RESTORE));
    let (main, _) = Actions::of_request_main("bring back the archived initiative");
    assert_eq!(main, Actions::RESTORE);
    assert!(!Actions::of_request("archive the Q3 initiative").intersects(Actions::RESTORE));
    // Bringing something back changes it: a question does not ask for it.
    assert!(Actions::CHANGING.intersects(Actions::RESTORE));
}

#[test]
fn an_opening_tool_verb_reads_as_a_change_unless_it_sets_something_up() {
    let opens_with_tool_verb = |text| opens_with_tool_verb(&intent::opening_words(text));
    assert!(opens_with_tool_verb("set the status of ENG-12 to done"));
    assert!(opens_with_tool_verb("please set an alarm for 6:30"));
    assert!(!opens_with_tool_verb("set up a new Postgres server"));
    assert!(!opens_with_tool_verb("set a new alarm for 5 pm"));
    assert!(!opens_with_tool_verb("show the settings"));
}
