use serde_json::Value;

/// What the strictest known clients accept: a plain `type` string, `properties` on every
/// object, no custom `format`, optional fields simply not `required`.
fn faults(path: &str, schema: &Value, out: &mut Vec<String>) {
    let Some(object) = schema.as_object() else {
        return;
    };
    match object.get("type") {
        Some(Value::String(kind)) if kind == "object" && !object.contains_key("properties") => {
            out.push(format!("{path}: an object without `properties`"));
        }
        Some(Value::String(_)) => {}
        Some(other) => out.push(format!("{path}: `type` is {other}, not one string")),
        None if !path.is_empty() || object.contains_key("properties") => {
            out.push(format!("{path}: no `type`"));
        }
        None => {}
    }
    for key in ["format", "nullable", "anyOf", "oneOf", "$ref", "$defs"] {
        if object.contains_key(key) {
            out.push(format!("{path}: has `{key}`"));
        }
    }
    if let Some(Value::Object(properties)) = object.get("properties") {
        for (name, property) in properties {
            faults(&format!("{path}.{name}"), property, out);
        }
    }
    if let Some(items) = object.get("items") {
        faults(&format!("{path}[]"), items, out);
    }
}

#[test]
fn every_tool_schema_is_one_every_client_accepts() {
    for tool in super::tools() {
        let schema = Value::Object((*tool.input_schema).clone());
        let mut found = Vec::new();
        faults("", &schema, &mut found);
        if schema.get("type") != Some(&Value::String("object".into())) {
            found.push("the input is not typed `object`".into());
        }
        assert!(found.is_empty(), "{}: {found:#?}\n{schema:#}", tool.name);
    }
}

#[test]
fn a_schema_says_the_least_value_each_field_takes() {
    let tools = super::tools();
    let minimum = |tool: &str, field: &str| {
        let tool = tools
            .iter()
            .find(|known| known.name == tool)
            .expect("a tool");
        tool.input_schema["properties"][field]["minimum"].as_u64()
    };
    // 0 is refused for these: the schema says 1.
    for (tool, field) in [
        ("bash", "timeout_ms"),
        ("bash", "detach_after_ms"),
        ("task_output", "max_bytes"),
        ("task_output", "idle_ms"),
    ] {
        assert_eq!(minimum(tool, field), Some(1), "{tool}.{field}");
    }
    for (tool, field) in [("task_output", "since"), ("task_output", "wait_ms")] {
        assert_eq!(minimum(tool, field), Some(0), "{tool}.{field}");
    }
}
