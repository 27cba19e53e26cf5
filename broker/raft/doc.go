// Package raft is the metadata quorum (Kafka's KafkaRaftClient and
// KafkaMetadataLog): the controller voters replicate the cluster metadata
// log, __cluster_metadata-0, with go.etcd.io/raft/v3 (not home-made
// consensus), store it with the log package in Kafka's layout, and hand
// the committed batches, in order, to a state machine (the controller's
// and broker's metadata image).
//
// # API
//
//	n, err := raft.Open(cfg, sm)              // sm: StateMachine (Listener + WriteSnapshot)
//	n, err := raft.OpenObserver(cfg, sm)      // a non-voter following the leader (see Observers)
//	resp := n.HandleFetch(req), n.HandleFetchSnapshot(req) // the leader's side for observers
//	off, err := n.ScheduleAppend(epoch, recs) // leader of epoch only; offset of the last record
//	err = n.WaitForCommit(ctx, epoch, off)    // nil once committed; *NotLeaderError if leadership went first
//	n.LeaderAndEpoch(), n.HighWatermark(), n.DescribeQuorum(), n.State()
//	resp, err := n.HandleTransportRequest(body) // the controller listener's handler for APIKey
//	err = n.AddVoter(ctx, v), n.RemoveVoter(ctx, id, dir) // KIP-853, on the leader; Voters()
//	resp := n.HandleUpdateRaftVoter(ctx, req) // a voter's new endpoints (UpdateRaftVoter)
//	n.Done(), n.Err(), n.Close()
//
// # Entries, batches, offsets
//
// One raft entry is one magic-v2 record batch: the records the active
// controller appends with one ScheduleAppend, all or none (Kafka's atomic
// append). The entry's term is the batch's partition leader epoch. etcd's
// empty entry at the start of a term is written as a control batch holding
// one LeaderChangeMessage (control record type 2, version 0: the new
// leader and the voters; GrantingVoters is left empty, etcd does not say
// who voted).
//
// Offsets count records, as in every Kafka log: a batch of n records takes
// n offsets, and the log of a new quorum starts at offset 0 (the first
// batch is the first leader's LeaderChangeMessage). Raft indices count
// entries: index i is the i-th batch of the quorum's history. So the raft
// index is not the offset. It cannot be with etcd raft: its indices are
// contiguous, one per entry, and the only way to give a batch n indices
// would be n entries, which etcd may send to a follower in different
// messages and so split a batch between leaders. The map from index to
// offset is kept in memory (8 bytes per batch in the log), rebuilt at
// start-up from the batch headers, and anchored by the newest snapshot,
// which records its raft index. etcd's index 0 (the empty log) is offset
// 0, i.e. nothing.
//
// Raft ids are node ids + 1: etcd reserves id 0 for "none", Kafka allows
// node.id 0.
//
// # Files
//
// In <metadata.log.dir>/__cluster_metadata-0/:
//
//	00000000000000000000.log, .index, .timeindex   the log, Kafka's segment
//	        format (see package log); one batch per entry, offsets as above
//	leader-epoch-checkpoint   epochs and their start offsets (package log)
//	quorum-state              Kafka's FileQuorumStateStore JSON, version 0:
//	        {"clusterId":"","leaderId":L,"leaderEpoch":T,"votedId":V,
//	         "appliedOffset":0,"currentVoters":[{"voterId":1},...],
//	         "data_version":0}
//	        etcd's HardState: term = leaderEpoch, vote = votedId (-1: none)
//	%020d-%010d.checkpoint    a snapshot: its end offset (it holds every
//	        record below it) and the epoch of its last record. Kafka's
//	        format: magic-v2 batches with offsets from 0 and the snapshot's
//	        epoch; first a control batch with a SnapshotHeaderRecord
//	        (type 3), then the state machine's records, last a control
//	        batch with a SnapshotFooterRecord (type 4). The header carries
//	        two tagged fields of Moldau's (tags 10000 and 10001: the raft
//	        index of the last batch contained and the end offset); Kafka
//	        readers skip unknown tags.
//	*.checkpoint.part         a snapshot being written; removed at start-up
//	*.checkpoint.deleted      a snapshot being deleted; removed at start-up
//
// # What is persisted when
//
// For every Ready of the raft goroutine, in this order and before any of
// its messages is sent (etcd's rule): a snapshot from the leader (written
// to .part, fsynced, renamed, dir fsynced; then the log starts over at its
// end offset); quorum-state when the term, vote or leader changed
// (written atomically: temp file, fsync, rename, dir fsync); the entries,
// appended as a follower would (a conflict first truncates the log at the
// first new index) and fsynced in one Flush. A leader's proposals ride the
// same fsync: appends are group-committed per Ready.
//
// The commit index is not persisted, as Kafka does not persist the
// metadata log's high watermark. At start-up it is the newest snapshot's
// index, and the node learns the rest from the leader (or, alone, from its
// own election, which commits everything in its log). This is safe: a
// commit index is knowledge about the quorum, not state of this node;
// entries a majority stored stay committed whatever one node forgets, and
// the state machine is rebuilt from the snapshot at every start, so
// nothing is applied twice. KnownHighWatermark tells whether the node has
// learned a commit since it opened: the broker's metadata loader publishes
// nothing before it has replayed up to it.
//
// Snapshots: the listener goroutine asks the state machine for one once
// metadata.log.max.record.bytes.between.snapshots (20 MiB) of batches were
// committed since the last, or once metadata.log.max.snapshot.interval.ms
// (an hour) has passed since the last (or since the node opened) and any
// batch was committed since (Kafka's SnapshotGenerator). When it is durable, older snapshots are
// deleted, and if the log is over metadata.max.retention.bytes (100 MiB)
// its segments wholly before the snapshot are deleted (Kafka's
// KafkaMetadataLog.maybeClean; the time limit, metadata.max.retention.ms,
// is not applied). A follower that needs entries older than the leader's
// log gets the newest snapshot whole (etcd's MsgSnap).
//
// Start-up (Kafka's KafkaMetadataLog.apply and truncateToLatestSnapshot):
// partial and deleted snapshot files are removed; the newest snapshot is
// checked and older ones deleted; the log is opened with full recovery
// (every batch's CRC checked; a torn or corrupt tail truncated); if the
// log does not reach the snapshot's end, or its batch there does not end
// the snapshot's epoch, it starts over at the snapshot's end. The
// listener then gets the snapshot (HandleLoadSnapshot) and the committed
// batches after it as the commit index becomes known.
//
// # Guarantees
//
//   - A batch is committed once a majority of the voters fsynced it. Every
//     committed batch is delivered to every voter's listener, once per
//     process lifetime, in offset order, each whole. Nothing committed is
//     lost while a majority of voters keeps its disk, whichever nodes are
//     closed, killed (kill -9) or restarted, and in any order.
//   - A single voter commits after its own fsync; it elects itself at once
//     at Open.
//   - With PreVote and CheckQuorum on and the default 1 s election timeout
//     and 100 ms ticks, a new leader is elected 1 to 2 s (plus a round
//     trip) after the old one stops; a leader cut off from a majority
//     steps down within the election timeout.
//   - ScheduleAppend fails at once with a *NotLeaderError (errors.Is
//     ErrNotLeader and kerr.NotController) unless this node leads that
//     epoch. WaitForCommit never hangs on a lost leadership: it fails as
//     soon as this node stops leading the epoch (the batch may still be
//     committed by the next leader, or dropped; HandleCommit tells).
//   - HandleLeaderChange naming this node as leader comes only after the
//     listener saw every batch up to and including the epoch's
//     LeaderChange batch, so the state is complete before the first
//     append of the epoch.
//   - An I/O error (write, fsync, rename, read, a new segment, a snapshot,
//     quorum-state) stops the node: Done is closed, Err says why and names
//     the file, one ERROR line is logged, pending calls fail with it;
//     nothing panics out of the node. etcd raft panics when a
//     raft.Storage method reports a failed read (it can only return
//     raft's sentinel errors): the raft goroutine, and the election at
//     Open, recover and report the storage error noted by the storage
//     (no stack is logged); a noted error raft did not panic on stops the
//     node at the next Ready. etcd raft's invariant panics (bugs, not
//     I/O) are reported as internal errors with their stack. The broker
//     treats any such stop as fatal (Kafka's raft fault handler halts).
//
// # Goroutines and locks
//
// All goroutines are started through one routine.Group and stop on Close
// (idempotent; it waits for a listener callback in progress to return):
//
//   - the raft goroutine owns the RawNode and the storage (metadataLog): it
//     ticks, steps inbound messages and proposals, and handles each Ready
//     (persist, send, publish). It never waits for another goroutine of
//     the node: sends to peers go to bounded queues, and the listener is
//     told the new high watermark, not handed entries.
//   - the listener goroutine (applier) reads committed batches from the
//     log (safe for concurrent use) up to the high watermark and calls the
//     Listener, in order; it also writes snapshots. So a slow listener
//     neither blocks raft nor grows memory, and it may call ScheduleAppend.
//   - one sender goroutine per peer voter: a queue of PeerQueueSize
//     messages (full: the message is dropped and raft told the peer is
//     unreachable), one connection, one request in flight, redial with
//     backoff (controller.quorum.retry.backoff.ms doubling to 1 s).
//   - the voter updater (voter_update.go): every UpdateVoterPeriod it
//     compares this voter's entry in the voter set with its current
//     endpoints and directory id, and if they differ (at kraft.version 1)
//     sends UpdateRaftVoter to the leader over a connection of its own.
//
// The raft goroutine, the senders and the voter updater run only while
// the node is a voter (a voter scope, voter_removal.go): a voter removed
// while it runs stops them and starts the observer goroutine (below), and
// an observer added to the voters starts them again.
//
// Node.mu guards the status other goroutines read (leader, epoch, high
// watermark, voters' progress) and the commit waiters; notes.mu the
// reports left for the raft goroutine; applier.mu the listener's targets.
// None is held while taking another, nor across I/O. The log's own locks
// are below all of them.
//
// # Observers
//
// A node that is not a voter (a broker-only node) opens with OpenObserver
// and follows the log as Kafka's observers do (observer.go,
// observer_serve.go). One goroutine, in place of the raft goroutine,
// sends Fetch (v17, __cluster_metadata-0 by its topic id
// AAAAAAAAAAAAAAAAAAAAAQ, fetch offset = its log end, max wait 500 ms)
// to the leader's controller listener; the leader answers with the
// committed batches from there (never past its high watermark), with the
// id of its newest snapshot when the offset is below its log start (the
// observer then fetches it in chunks with FetchSnapshot, API 59, installs
// it as a follower installs the leader's, and the log starts over at its
// end), or with NOT_LEADER_OR_FOLLOWER and the leader it knows. The
// observer appends the batches to its own __cluster_metadata-0 with the
// same raft indices as the voters (one batch, one index; the snapshot's
// header carries its index), fsyncs, and hands them to the applier, so
// the state machine, snapshots and clean-up run as on a voter, and a
// restart replays its own snapshot and log. Everything in an observer's
// log is committed: the high watermark it reports is the leader's.
//
// It finds the leader through controller.quorum.voters or the bootstrap
// servers (tried in turn after a failure), and follows the leader a
// response names when its epoch is newer (the listener gets
// HandleLeaderChange); Fetch v16+ responses carry the leader's endpoint
// (NodeEndpoints), which ControllerAddress returns to the broker's
// controller channel. An observer never votes: ScheduleAppend fails with
// a *NotLeaderError, transport messages are refused, State is
// "observer". The leader lists the observers that fetched since its
// election in DescribeQuorum; a Fetch with no replica id (-1, as `moldau
// console --bootstrap-controller` sends) is answered but not listed, as
// Kafka's leader ignores it. A controller is an observer too while it is
// not a voter: opened outside the voter set, or removed from it while it
// runs (see Differences, voters).
//
// # Transport
//
// Raft messages travel as Kafka-framed requests on the controller
// listener with a Moldau-private API key (APIKey = 10000, version 0, not
// advertised in ApiVersions): the body is a count and length-prefixed
// marshalled raftpb.Messages; the response (header v0) is an int16 error
// code. The broker's socket server must let this key through to the
// controller listener's handler, which calls HandleTransportRequest.
//
// # Differences from Kafka's KRaft
//
//   - etcd raft pushes: the leader sends appends and heartbeats
//     (MsgApp/MsgHeartbeat) and followers acknowledge, where KRaft's
//     followers pull with Fetch and FetchSnapshot and elections use Vote,
//     BeginQuorumEpoch and EndQuorumEpoch RPCs. Here every message is one
//     private request type; DescribeQuorum's "last fetch" is the last
//     acknowledgement the leader got.
//   - Raft indices count batches, offsets count records (above); KRaft
//     uses offsets for both.
//   - Voters (KIP-853, voters.go, voter_change.go): the voter set starts
//     as controller.quorum.voters (kraft.version 0, no control record);
//     AddVoter/RemoveVoter write a control batch with a VotersRecord
//     (type 6; the first change also a KRaftVersionRecord, type 5), which
//     snapshots carry after their header. The newest VotersRecord in
//     snapshot + log is the configuration at start-up (as Kafka); at run
//     time a change takes effect when committed (etcd's ApplyConfChange),
//     one at a time. Kafka refuses changes at kraft.version 0; Moldau
//     upgrades to 1 with the first change. A node not in the set opens as
//     an observer and becomes a voter when a committed VotersRecord names
//     it and its log has caught up with the leader's high watermark (its
//     vote in the current term kept).
//   - A voter removed while it runs goes on as an observer, as Kafka's
//     does (voter_removal.go). etcd's leader stops sending to a voter once
//     it applied its removal, so the voter may never learn that it
//     committed. A voter turns observer when the newest VotersRecord in
//     its log (committed or not) lacks it and either it applied that
//     removal and knows another leader, or it heard no leader (append,
//     heartbeat, snapshot, timeout-now) for twice the election timeout
//     (2 s by default; Kafka's follower gives up on its leader after
//     controller.quorum.fetch.timeout.ms, 2 s, also twice the election
//     timeout). A leader that removes itself hands off its leadership
//     first and turns observer once the new leader reaches it or after
//     that bound. The transition stops the raft goroutine, the transport's
//     senders and the voter updater, truncates the log to the commit
//     index (what follows was never known committed here: an observer's
//     log holds committed batches only), logs one INFO line, and starts
//     the observer goroutine, which follows the leader by Fetch and is
//     listed among DescribeQuorum's observers; AddVoter makes it a voter
//     again. In Kafka the removed replica is an observer from the moment
//     the VotersRecord is in its log, and keeps fetching throughout.
//   - UpdateRaftVoter (voter_update.go): as in Kafka, a voter whose entry
//     differs from its endpoints, directory id or kraft.version range
//     asks the leader, which writes a VotersRecord with the same id and
//     directory id (to etcd a change adding a voter already there, so one
//     change at a time holds) and answers once it is appended; refused at
//     kraft.version 0 (UNSUPPORTED_VERSION). Kafka's follower sends it to
//     the leader it fetches from; here a voter restarted on another port
//     hears from no leader (etcd pushes to the old address), so it asks
//     the voters in turn and follows the leader their answers name. A
//     leader whose own entry is stale writes the new set itself at its
//     next check, where newer Kafka leaders write it at the start of
//     their epoch.
//   - Observers fetch committed batches only (the leader never answers
//     past its high watermark), so an observer's log never diverges and
//     Fetch's diverging epoch is never set; Kafka's observers fetch the
//     uncommitted tail too and truncate on divergence. Only the leader
//     answers observers (NOT_LEADER_OR_FOLLOWER elsewhere, naming it);
//     Kafka's observers also fetch from the leader only.
//   - The high watermark can be learned only from the leader, as in
//     KRaft; the commit index is not in quorum-state (appliedOffset is 0).
package raft
