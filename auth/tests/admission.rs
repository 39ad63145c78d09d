//! LoginGate inside a real glommio executor.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use shardline_auth::{LoginGate, LoginShed, LoginStage};

#[test]
fn at_most_n_in_progress_fifo_and_counters() {
    common::run(|| async {
        let gate = LoginGate::new(2, Duration::from_secs(10), None);
        let a = gate.admit(LoginStage::Handshake).await.expect("slot 1");
        let b = gate.admit(LoginStage::Handshake).await.expect("slot 2");
        assert_eq!(gate.in_progress(), 2);
        let order = Rc::new(RefCell::new(Vec::new()));
        let mut tasks = Vec::new();
        for id in 0..4 {
            let (g, o) = (gate.clone(), order.clone());
            tasks.push(glommio::spawn_local(async move {
                let p = g
                    .admit(LoginStage::Handshake)
                    .await
                    .expect("admitted eventually");
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
            let _p = g.admit(LoginStage::Handshake).await.expect("admitted");
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
        let gate = LoginGate::new(1, Duration::from_millis(20), None);
        let held = gate.admit(LoginStage::Handshake).await.expect("slot");
        let shed = gate.admit(LoginStage::Handshake).await.expect_err("shed");
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
        let again = gate
            .admit(LoginStage::Handshake)
            .await
            .expect("slot free again");
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

#[test]
fn password_checks_go_first_but_every_fourth_slot_goes_to_a_handshake() {
    common::run(|| async {
        let gate = LoginGate::new(1, Duration::from_secs(10), None);
        let held = gate.admit(LoginStage::Handshake).await.expect("slot");
        let order = Rc::new(RefCell::new(Vec::new()));
        let mut tasks = Vec::new();
        // Queued alternately: h0 p0 h1 p1 … h4 p4.
        for i in 0..5 {
            for (stage, name) in [
                (LoginStage::Handshake, format!("h{i}")),
                (LoginStage::Password, format!("p{i}")),
            ] {
                let (g, o) = (gate.clone(), order.clone());
                tasks.push(glommio::spawn_local(async move {
                    let _p = g.admit(stage).await.expect("admitted eventually");
                    o.borrow_mut().push(name);
                    glommio::timer::sleep(Duration::from_millis(1)).await;
                }));
                futures_lite::future::yield_now().await;
            }
        }
        assert_eq!(gate.waiting(), 10);
        drop(held);
        for t in tasks {
            t.await;
        }
        assert_eq!(
            order.borrow().join(" "),
            "p0 p1 p2 h0 p3 p4 h1 h2 h3 h4",
            "passwords first, at most {} in a row while handshakes wait",
            shardline_auth::PASSWORDS_PER_HANDSHAKE
        );
        assert_eq!(gate.in_progress(), 0);
    });
}
