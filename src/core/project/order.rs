//! The order processes start in: each after those it waits for.

use std::collections::HashMap;

use super::ProjectProcess;

/// The processes ordered so that each comes after those it waits for (else in the order given),
/// or the names of a cycle. Linear in the processes and their waits (Kahn's order, taking the
/// first ready one as given each time), so that a long chain of `after` loads at once.
pub(super) fn in_start_order(
    processes: Vec<ProjectProcess>,
) -> Result<Vec<ProjectProcess>, Vec<String>> {
    let at: HashMap<&str, usize> = processes
        .iter()
        .enumerate()
        .map(|(index, process)| (process.name.as_str(), index))
        .collect();
    // For each process, how many waits are not met yet, and who waits for it.
    let mut unmet = vec![0_usize; processes.len()];
    let mut waited_by: Vec<Vec<usize>> = vec![Vec::new(); processes.len()];
    for (index, process) in processes.iter().enumerate() {
        for after in process.after_names() {
            if let Some(&other) = at.get(after) {
                unmet[index] += 1;
                waited_by[other].push(index);
            }
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..processes.len())
        .filter(|&index| unmet[index] == 0)
        .collect();
    let mut order = Vec::with_capacity(processes.len());
    while let Some(index) = ready.pop_first() {
        order.push(index);
        for &waiter in &waited_by[index] {
            unmet[waiter] -= 1;
            if unmet[waiter] == 0 {
                ready.insert(waiter);
            }
        }
    }
    if order.len() < processes.len() {
        return Err(a_cycle(&processes, &at, &unmet));
    }
    let mut slots: Vec<Option<ProjectProcess>> = processes.into_iter().map(Some).collect();
    Ok(order
        .into_iter()
        .filter_map(|index| slots[index].take())
        .collect())
}

/// The names of a cycle among the processes whose waits are not all met: every one of them
/// waits for another of them, so following the waits from the first comes back to a name.
fn a_cycle(
    processes: &[ProjectProcess],
    at: &HashMap<&str, usize>,
    unmet: &[usize],
) -> Vec<String> {
    let stuck = |index: &usize| unmet[*index] > 0;
    let Some(mut current) = (0..processes.len()).find(stuck) else {
        return Vec::new();
    };
    let mut seen_at: HashMap<usize, usize> = HashMap::new();
    let mut path: Vec<usize> = Vec::new();
    loop {
        if let Some(&start) = seen_at.get(&current) {
            path.push(current);
            return path[start..]
                .iter()
                .map(|&index| processes[index].name.clone())
                .collect();
        }
        seen_at.insert(current, path.len());
        path.push(current);
        let next = processes[current]
            .after_names()
            .filter_map(|after| at.get(after).copied())
            .find(stuck);
        match next {
            Some(next) => current = next,
            // Cannot be: a stuck process waits for a stuck one.
            None => return vec![processes[current].name.clone()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn named(name: &str, after: &[&str]) -> ProjectProcess {
        let mut process = ProjectProcess::new(name, "x", "/".into());
        process.after = after
            .iter()
            .map(|&after| super::super::After::ready(after))
            .collect();
        process
    }

    /// The order as it was first written (quadratic, and cubic on a chain written backwards):
    /// the reference the linear one must agree with.
    fn reference_order(mut left: Vec<ProjectProcess>) -> Result<Vec<String>, Vec<String>> {
        let mut ordered: Vec<String> = Vec::new();
        while !left.is_empty() {
            let placed = |name: &String| ordered.contains(name);
            if let Some(next) = left
                .iter()
                .position(|process| process.after_names().all(|name| placed(&name.to_owned())))
            {
                ordered.push(left.remove(next).name);
            } else {
                let mut cycle = vec![left[0].name.clone()];
                loop {
                    let current = cycle.last().cloned().unwrap_or_default();
                    let next = left
                        .iter()
                        .find(|process| process.name == current)
                        .and_then(|process| {
                            process
                                .after_names()
                                .find(|after| !placed(&(*after).to_owned()))
                        })
                        .map(str::to_owned)
                        .unwrap_or_default();
                    if let Some(start) = cycle.iter().position(|name| *name == next) {
                        cycle.push(next);
                        return Err(cycle.split_off(start));
                    }
                    cycle.push(next);
                }
            }
        }
        Ok(ordered)
    }

    fn names(order: Result<Vec<ProjectProcess>, Vec<String>>) -> Result<Vec<String>, Vec<String>> {
        order.map(|processes| processes.into_iter().map(|process| process.name).collect())
    }

    #[test]
    fn a_long_chain_written_backwards_is_ordered_and_a_cycle_is_named() {
        let count = 4000;
        // Written backwards: each waits for the one after it, the last one first to start.
        let chain: Vec<ProjectProcess> = (0..count)
            .map(|n| {
                let before = format!("p{}", n + 1);
                let after: &[&str] = if n + 1 < count { &[&before] } else { &[] };
                named(&format!("p{n}"), after)
            })
            .collect();
        let order = names(in_start_order(chain)).expect("no cycle");
        let expected: Vec<String> = (0..count).rev().map(|n| format!("p{n}")).collect();
        assert_eq!(order, expected);

        let cycle = vec![
            named("web", &["api"]),
            named("api", &["db"]),
            named("db", &["web"]),
            named("docs", &[]),
        ];
        assert_eq!(
            names(in_start_order(cycle)),
            Err(vec!["web".into(), "api".into(), "db".into(), "web".into()])
        );
    }

    proptest::proptest! {
        /// On any graph of waits, cycles included, the order (or the cycle named) is the one the
        /// first way of ordering gave.
        #[test]
        fn the_order_is_the_reference_order(waits in proptest::collection::vec(
            proptest::collection::vec(0_usize..7, 0..3), 1..7,
        )) {
            let processes: Vec<ProjectProcess> = waits
                .iter()
                .enumerate()
                .map(|(index, after)| {
                    let after: Vec<String> = after
                        .iter()
                        .filter(|&&other| other < waits.len())
                        .map(|other| format!("p{other}"))
                        .collect();
                    let after: Vec<&str> = after.iter().map(String::as_str).collect();
                    named(&format!("p{index}"), &after)
                })
                .collect();
            proptest::prop_assert_eq!(
                names(in_start_order(processes.clone())),
                reference_order(processes)
            );
        }
    }
}
