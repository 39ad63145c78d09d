//! The log writer's group write: the records a shard appends while its reactor turn runs reach
//! the file in one write (`shardline_aof_writes_total`), not one write per record.

mod common;

use common::{encode_command, login_plain, wait_for, Server};

/// SETs sent in one pipeline: executed in one turn of the connection's task.
const SETS: usize = 100;

#[test]
fn a_pipeline_of_writes_reaches_the_log_in_a_few_writes() {
    let server = Server::start(&["--tls", "off", "--smp", "1", "--appendfsync", "everysec"]);
    let mut client = login_plain(&server);
    let metric = |name: &str| server.metric(name, &[("shard", "0")]);
    let records_before = metric("shardline_aof_records_total");
    let bytes_before = metric("shardline_aof_written_bytes_total");
    let writes_before = metric("shardline_aof_writes_total");
    let mut pipeline = Vec::new();
    for i in 0..SETS {
        pipeline.extend(encode_command(&[b"SET", format!("w:{i}").as_bytes(), b"v"]));
    }
    client.send_raw(&pipeline);
    for _ in 0..SETS {
        assert_eq!(client.read_reply(), b"+OK\r\n");
    }
    // Each record is `*3 $3 SET $3+ w:N $1 v` (CRLF after each): at least 29 bytes.
    wait_for(|| {
        metric("shardline_aof_records_total") - records_before == SETS as f64
            && metric("shardline_aof_written_bytes_total") - bytes_before >= (29 * SETS) as f64
    });
    let writes = metric("shardline_aof_writes_total") - writes_before;
    // The pipeline may arrive in more than one read (and run in more than one turn) on a
    // loaded machine, but never one record per write.
    assert!(
        (1.0..=10.0).contains(&writes),
        "{SETS} records reached the log in {writes} writes"
    );
}
