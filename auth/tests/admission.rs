//! LoginGate inside a real glommio executor.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use shardline_auth::{LoginGate, LoginShed};

#[test]
fn at_most_n_in_progress_fifo_and_counters() {
    common::run(|| async {
        let gate = LoginGate::new(2, Duration::from_secs(10));
        let a = gate.admit().await.expect("slot 1");
        let b = gate.admit().await.expect("slot 2");
        assert_eq!(gate.in_progress(), 2);
        let order = Rc::new(RefCell::new(Vec::new()));
        let mut tasks = Vec::new();
        for id in 0..4 {
            let (g, o) = (gate.clone(), order.clone());
            tasks.push(glommio::spawn_local(async move {
                let p = g.admit().await.expect("admitted eventually");
                o.borrow_mut().push(id);
                glommio::timer::sleep(Duration::from_millis(2)).await;
                drop(p);
            }));
            futures_lite::future::yield_now().await; // queue them in id order
        }
        assert_eq!(gate.waiting(), 4);
        assert_eq!(gate.in_progress(), 2);
        drop(a);
        // A newcomer must not overtake the queue.
        let (g, o) = (gate.clone(), order.clone());
        let late = glommio::spawn_local(async move {
            let _p = g.admit().await.expect("admitted");
            o.borrow_mut().push(99);
        });
        drop(b);
        for t in tasks {
            t.await;
        }
        late.await;
        assert_eq!(*order.borrow(), vec![0, 1, 2, 3, 99]);
        assert_eq!(gate.in_progress(), 0);
        assert_eq!(gate.waited_total(), 5);
        assert_eq!(gate.admitted_total(), 7);
        assert_eq!(gate.shed_total(), 0);
    });
}

#[test]
fn waiters_are_shed_after_the_timeout_and_slots_are_not_lost() {
    common::run(|| async {
        let gate = LoginGate::new(1, Duration::from_millis(20));
        let held = gate.admit().await.expect("slot");
        let shed = gate.admit().await.expect_err("shed");
        assert_eq!(
            shed,
            LoginShed {
                waited: Duration::from_millis(20),
                max_concurrent: 1
            }
        );
        assert_eq!(gate.shed_total(), 1);
        assert_eq!(gate.waiting(), 0);
        drop(held);
        assert_eq!(
            gate.in_progress(),
            0,
            "the dead waiter did not keep the slot"
        );
        let again = gate.admit().await.expect("slot free again");
        assert_eq!(gate.in_progress(), 1);
        drop(again);
        assert_eq!(
            (
                gate.waited_total(),
                gate.shed_total(),
                gate.admitted_total()
            ),
            (1, 1, 2)
        );
    });
}
