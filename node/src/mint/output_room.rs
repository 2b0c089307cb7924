//! Room left in the localnet's batched output queues, as this process
//! knows it: a queue's counts are read from its account once, then every
//! output this process sends there is taken from that room before it is
//! sent. So a burst of releases moves on to the next queue as the room
//! runs out, instead of a whole burst being refused by a queue that filled
//! under it (each refusal a failed transaction, its fee, and a send again
//! one or two slots later).
//!
//! Owns the process-wide map of that room, by RPC endpoint and queue. It
//! only ever steers which queue is tried: the chain still judges every
//! send, a queue another process filled meanwhile is still found by its
//! refusal ([`super::light::send_to_open_tree`]), and exactly-once of
//! releases never rests on it (that is the derived mint's and the signed
//! `release` memo's). Counted only on a local cluster, where no forester
//! empties the queues; elsewhere, or for an account it cannot read or
//! parse, the room is unknown and the send is tried.

use crate::chain::{Chain, ClusterKind, Pubkey};
use std::collections::hash_map::Entry;
use std::collections::HashMap;

/// The discriminator of a batched queue account (`BatchedQueueAccount`).
const QUEUE_DISCRIMINATOR: &[u8; 8] = b"queueacc";
/// Where a batched output queue account (Light's `BatchedQueueMetadata`)
/// keeps its `QueueBatches` counts: `num_batches`, `batch_size`, then
/// (past `zkp_batch_size`, `bloom_filter_capacity`,
/// `currently_processing_batch_index` and `pending_batch_index`)
/// `next_index`, each a little-endian u64.
const NUM_BATCHES_AT: usize = 232;
const BATCH_SIZE_AT: usize = 240;
const NEXT_INDEX_AT: usize = 280;

/// Outputs a batched output queue still takes when no forester empties
/// it (the localnet runs none): its batches' capacity less the outputs it
/// has taken. `None` when `data` is not such an account.
pub fn room_in(data: &[u8]) -> Option<u64> {
    if data.get(..8)? != QUEUE_DISCRIMINATOR {
        return None;
    }
    let u64_at = |at: usize| {
        data.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
    };
    let (batches, size, next) = (
        u64_at(NUM_BATCHES_AT)?,
        u64_at(BATCH_SIZE_AT)?,
        u64_at(NEXT_INDEX_AT)?,
    );
    // a layout this does not know (or garbage) says nothing
    if batches == 0 || batches > 16 || size == 0 || size > 1 << 20 {
        return None;
    }
    Some((batches * size).saturating_sub(next))
}

/// What this process knows of one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Room {
    /// Its account says nothing (not a local cluster, or not a batched
    /// queue): every send there is tried.
    Unknown,
    /// Outputs it still takes.
    Left(u64),
    /// The chain refused it as full: nothing given back revives it.
    Full,
}

type Rooms = HashMap<(String, Pubkey), Room>;
static ROOM: tokio::sync::Mutex<Option<Rooms>> = tokio::sync::Mutex::const_new(None);

fn key(chain: &Chain, queue: &Pubkey) -> (String, Pubkey) {
    (chain.endpoint().rpc_url.clone(), *queue)
}

/// What `queue`'s account says of its room: counted only on a local
/// cluster and for the account-compression program's batched queues.
/// `None`: it could not be read (tried again next time).
async fn read_room(chain: &Chain, queue: &Pubkey) -> Option<Room> {
    let local = matches!(chain.cluster_kind().await, Ok(ClusterKind::Local));
    if !local {
        return Some(Room::Unknown);
    }
    let read = crate::chain::retry::with_retry("getAccountInfo", || {
        chain
            .rpc()
            .get_account_with_commitment(queue, chain.commitment())
    })
    .await;
    match read {
        Ok(account) => Some(
            account
                .value
                .filter(|a| a.owner == super::light_programs::ACCOUNT_COMPRESSION)
                .and_then(|a| room_in(&a.data))
                .map_or(Room::Unknown, Room::Left),
        ),
        Err(e) => {
            tracing::warn!(%queue, error = %e, "reading an output queue's room failed; sending there regardless");
            None
        }
    }
}

/// Takes room for `outputs` outputs in `queue`, reading its counts the
/// first time this process sends there. `false`: this process has
/// already sent it as many outputs as it had room for, or the chain
/// refused it as full (use another). A room that cannot be read is no
/// reason not to send.
pub async fn take(chain: &Chain, queue: &Pubkey, outputs: u64) -> bool {
    let mut known = ROOM.lock().await;
    let rooms = known.get_or_insert_with(HashMap::new);
    let room = match rooms.entry(key(chain, queue)) {
        Entry::Occupied(room) => room.into_mut(),
        Entry::Vacant(slot) => match read_room(chain, queue).await {
            Some(read) => {
                tracing::debug!(%queue, ?read, "output queue room read");
                slot.insert(read)
            }
            None => return true,
        },
    };
    match room {
        Room::Unknown => true,
        Room::Left(left) if *left >= outputs => {
            *left -= outputs;
            true
        }
        Room::Left(_) | Room::Full => false,
    }
}

/// Gives back room taken for `outputs` outputs in `queue` by a send that
/// certainly appended nothing (it landed failed, or expired unlanded).
pub async fn give_back(chain: &Chain, queue: &Pubkey, outputs: u64) {
    if let Some(rooms) = ROOM.lock().await.as_mut() {
        if let Some(Room::Left(left)) = rooms.get_mut(&key(chain, queue)) {
            *left += outputs;
        }
    }
}

/// Marks `queue` full: the chain refused it while this process thought it
/// had room (another process sent there too).
pub async fn spent(chain: &Chain, queue: &Pubkey) {
    ROOM.lock()
        .await
        .get_or_insert_with(HashMap::new)
        .insert(key(chain, queue), Room::Full);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue account's counts as the localnet's accounts hold them
    /// (2 batches of 50; `next_index` as given).
    fn queue(next_index: u64) -> Vec<u8> {
        let mut d = vec![0u8; 4136];
        d[..8].copy_from_slice(QUEUE_DISCRIMINATOR);
        d[NUM_BATCHES_AT..NUM_BATCHES_AT + 8].copy_from_slice(&2u64.to_le_bytes());
        d[BATCH_SIZE_AT..BATCH_SIZE_AT + 8].copy_from_slice(&50u64.to_le_bytes());
        d[248..256].copy_from_slice(&10u64.to_le_bytes());
        d[NEXT_INDEX_AT..NEXT_INDEX_AT + 8].copy_from_slice(&next_index.to_le_bytes());
        d
    }

    #[test]
    fn room_is_the_batches_capacity_less_what_was_taken() {
        assert_eq!(room_in(&queue(0)), Some(100));
        assert_eq!(room_in(&queue(37)), Some(63));
        assert_eq!(room_in(&queue(100)), Some(0));
        // a forester ran somewhere: more taken than two batches hold
        assert_eq!(room_in(&queue(250)), Some(0));
    }

    #[test]
    fn anything_else_says_nothing() {
        assert_eq!(room_in(&[]), None);
        assert_eq!(room_in(&[0u8; 200]), None);
        assert_eq!(room_in(&[0u8; 4136]), None, "no discriminator");
        let mut no_batches = queue(0);
        no_batches[NUM_BATCHES_AT..NUM_BATCHES_AT + 8].fill(0);
        assert_eq!(room_in(&no_batches), None, "no batches");
        let mut garbage = vec![0xff; 4136];
        garbage[..8].copy_from_slice(QUEUE_DISCRIMINATOR);
        assert_eq!(room_in(&garbage), None, "garbage counts");
    }

    /// The localnet's first queue account, as the CLI's accounts hold it
    /// (the repo's copy), reads as an empty queue of 100.
    #[test]
    fn the_localnet_queue_account_reads_as_an_empty_queue_of_a_hundred() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "../tests/fixtures/light/batched_output_queue_oq1na8gojfdUhsfCpyjNt6h4JaDWtHf1yQj4koBWfto.json",
        );
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(
            v["pubkey"].as_str(),
            Some(
                crate::mint::light_programs::LOCALNET_STATE_TREE
                    .to_string()
                    .as_str()
            )
        );
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD
            .decode(v["account"]["data"][0].as_str().unwrap())
            .unwrap();
        assert_eq!(room_in(&data), Some(100));
    }
}
