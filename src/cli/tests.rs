use super::*;

#[test]
fn the_demo_names_each_of_its_calls() {
    let demo = demo_commands();
    let titles: Vec<_> = demo.iter().map(|(title, _)| title.as_deref()).collect();
    assert_eq!(
        titles,
        [
            Some("clock"),
            Some("build"),
            Some("server"),
            Some("tests"),
            Some("colors"),
            Some("echo")
        ]
    );
    assert!(demo.iter().all(|(_, command)| !command.starts_with('#')));
}
