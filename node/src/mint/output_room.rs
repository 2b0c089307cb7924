//! Room left in the localnet's batched output queues, as this process
//! knows it: a queue's counts are read from its account once, then every
//! output this process sends there is taken from that room before it is
//! sent. So a burst of releases moves on to the next queue as the room
//! runs out, instead of a whole burst being refused by a queue that filled
//! under it (each refusal a failed transaction, its fee, and a send again
//! one or two slots later).
//!
//! It only ever steers: the chain still judges every send, and a queue
//! another process filled meanwhile is still found by its refusal
//! ([`super::light::send_to_open_tree`]). It never reads anything but the
//! queue's counts, and an account it cannot read or parse (not a batched
//! output queue, or another cluster's) is "room unknown": the send is
//! tried.

use crate::chain::{Chain, ChainError, Pubkey};
use std::collections::HashMap;

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

/// What this process knows of each queue's room, by RPC endpoint and
/// queue (a process may talk to more than one localnet): outputs left, or
/// `None` when its account says nothing (every send there is tried).
type Rooms = HashMap<(String, Pubkey), Option<u64>>;
static ROOM: tokio::sync::Mutex<Option<Rooms>> = tokio::sync::Mutex::const_new(None);

/// Takes room for `outputs` outputs in `queue`, reading its counts the
/// first time this process sends there. `false`: this process has
/// already sent it as many outputs as it had room for (use another).
pub async fn take(chain: &Chain, queue: &Pubkey, outputs: u64) -> Result<bool, ChainError> {
    let mut known = ROOM.lock().await;
    let rooms = known.get_or_insert_with(HashMap::new);
    let key = (chain.endpoint().rpc_url.clone(), *queue);
    let room = match rooms.get_mut(&key) {
        Some(room) => room,
        None => {
            let account = crate::chain::client::with_retry("getAccountInfo", || {
                chain
                    .rpc()
                    .get_account_with_commitment(queue, chain.commitment())
            })
            .await?;
            let left = account.value.and_then(|a| room_in(&a.data));
            tracing::debug!(%queue, ?left, "output queue room read");
            rooms.entry(key).or_insert(left)
        }
    };
    Ok(match room {
        None => true,
        Some(left) if *left >= outputs => {
            *left -= outputs;
            true
        }
        Some(_) => false,
    })
}

/// Gives back room taken for `outputs` outputs in `queue` by a send that
/// certainly appended nothing (it landed failed, or expired unlanded).
pub async fn give_back(chain: &Chain, queue: &Pubkey, outputs: u64) {
    if let Some(rooms) = ROOM.lock().await.as_mut() {
        if let Some(Some(left)) = rooms.get_mut(&(chain.endpoint().rpc_url.clone(), *queue)) {
            *left += outputs;
        }
    }
}

/// Forgets `queue`'s room: the chain refused it as full while this process
/// thought it had some (another process sent there too).
pub async fn spent(chain: &Chain, queue: &Pubkey) {
    if let Some(rooms) = ROOM.lock().await.as_mut() {
        rooms.insert((chain.endpoint().rpc_url.clone(), *queue), Some(0));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A queue account's counts as the localnet's accounts hold them
    /// (2 batches of 50; `next_index` as given).
    fn queue(next_index: u64) -> Vec<u8> {
        let mut d = vec![0u8; 4136];
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
        assert_eq!(room_in(&[0u8; 4136]), None, "no batches");
        assert_eq!(room_in(&[0xff; 4136]), None, "garbage counts");
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
            Some(crate::mint::light::LOCALNET_STATE_TREE.to_string().as_str())
        );
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD
            .decode(v["account"]["data"][0].as_str().unwrap())
            .unwrap();
        assert_eq!(room_in(&data), Some(100));
    }
}
