/*
 * lease.pml: a Promela model of workgraph's claim protocol, checked with spin
 * (make model). One item, W workers, at most NL leases (claims) in a run.
 *
 * Each atomic block is one SQL statement (its transaction's row locks make
 * it indivisible); docs/architecture.md ("The model") maps each block to the
 * statement in db/queries/lease.sql that implements it. Time is the
 * database's clock only: the Clock process may let the current lease pass
 * its expires_at at any point, so every interleaving of a slow, paused or
 * partitioned worker with expiry and reclaim is explored. Workers have no
 * clock of their own in the model (theirs are diagnostic only).
 *
 * Variants (preprocessor flags):
 *   (none)    the protocol as built: must verify with no errors.
 *   -DNOFENCE the fence predicate is removed from the worker's writes
 *             (complete, release, renew): spin must find a stale write.
 *   -DNOGATE  the destination admits every token: spin must find a stale
 *             write admitted at the destination.
 *   -DRECONCILE the item's on_expiry is "reconcile": an expiry holds the
 *             item for a Person's decision (retry, done, cancel) in the
 *             same transaction; must verify, with I5.
 *   -DRECONCILE -DSPLIT the hold is opened in a transaction of its own,
 *             after the expiry freed the item: spin must find a claim
 *             granted while an attempt's outcome is undecided (I5).
 *   -DNOBLOCK the worker's completion ignores work a person added while
 *             the item was leased (ADR 0008): spin must find the item
 *             done before that work (I6).
 *   -DRECONCILE -DNOBLOCKDECIDE a person's done decision ignores it:
 *             spin must find the item done before that work (I6).
 *
 * Invariants (checked by the Invariants process, after every step):
 *   I1 at most one holder: at most one lease of the item has not ended;
 *   I2 no stale write admitted by workgraph: a completion or release commits
 *      only for a lease that is the item's current one and unexpired by the
 *      database clock;
 *   I3 no stale write admitted by the gate: the destination never applies a
 *      token smaller than one it already applied;
 *   I4 one outcome per lease (every ended lease has one, written once), and
 *      the item is completed at most once;
 *   I5 (RECONCILE) no lease is granted while an expired attempt's outcome
 *      is undecided;
 *   I6 the item is never completed (by its worker, or by a person's done
 *      decision) while work a person added to it is unfinished: a
 *      dependency on an unfinished item or an open child (ADR 0008).
 */

#ifndef W
#define W 2
#endif
#ifndef NL
#define NL 3  /* at most 4: the invariants name four leases */
#endif
#define MAXL 4

/* Outcomes of a lease (leases.outcome). */
#define NONE      0
#define COMPLETED 1
#define RELEASED  2
#define EXPIRED   3

/* The item's row (items). */
byte epoch = 0;      /* items.epoch */
byte holder = 0;     /* items.active_lease_id: lease index + 1, 0 = NULL */
bool done = false;   /* items.status = 'done' (or cancelled: it is over) */
/* items.unmet_dependencies > 0 or items.open_children > 0: a Planner (a
 * person changing the plan) added a dependency on an unfinished item or a
 * child, at any time, also while the item is leased. */
bool unmet = false;

/* The leases' rows (leases), index = claim order. */
byte nleases = 0;
byte l_epoch[MAXL];    /* leases.epoch */
bool l_ended[MAXL];    /* leases.ended_at IS NOT NULL */
bool l_expired[MAXL];  /* leases.expires_at <= the database clock */
byte l_outcome[MAXL];  /* leases.outcome */
byte l_outcomes[MAXL]; /* ghost: how many times an outcome was written */

/* The destination's gate: the committed high-water mark of its resource. */
byte hwm = 0;

#ifdef RECONCILE
/* items.open_attention > 0: an open uncertain_outcome request holds it. */
bool held = false;
/* Ghost: an attempt expired and no person has decided yet. */
bool undecided = false;
/* Ghost: a claim was granted while undecided. */
bool granted_undecided = false;
#endif

/* Ghosts for the invariants. */
byte gate_max = 0;   /* the largest token the destination applied */
bool stale_wg = false;
bool stale_gate = false;
byte completions = 0;
bool done_early = false; /* completed while unmet (I6) */

/* item_finishable(unmet_dependencies, open_children), in the SET of the
 * statement that completes the item (EndLease; FinishItems for a
 * person's done decision): false raises WG007, 409 blocked. */
#ifdef NOBLOCK
#define FINISHABLE true
#else
#define FINISHABLE (!unmet)
#endif
#ifdef NOBLOCKDECIDE
#define DECIDE_FINISHABLE true
#else
#define DECIDE_FINISHABLE (!unmet)
#endif

/* The fence: the predicate every fenced worker statement carries
 * (WHERE id = $lease AND epoch = $epoch AND ended_at IS NULL
 *  AND expires_at > $now AND the item names the lease as its active one). */
#ifdef NOFENCE
#define FENCED(l) true
#else
#define FENCED(l) (!l_ended[l] && !l_expired[l] && holder == (l) + 1 && l_epoch[l] == epoch)
#endif

/* What makes a worker's write stale, judged independently of the fence. */
#define STALE(l) (l_ended[l] || l_expired[l] || holder != (l) + 1 || l_epoch[l] != epoch)

/* The destination's admission check (fence library: token >= mark). */
#ifdef NOGATE
#define ADMIT(t) true
#else
#define ADMIT(t) ((t) >= hwm)
#endif

/* Ends lease l with outcome o (one UPDATE of leases ... SET ended_at,
 * outcome). */
inline end_lease(l, o) {
	l_ended[l] = true;
	l_outcome[l] = o;
	l_outcomes[l]++
}

/* ExpireLeases (run by every claim first, and by the sweeper): the
 * item's active lease, if the database clock is past its expires_at, ends
 * as expired and the item is freed (active_lease_id = NULL). */
inline reap() {
	if
	:: holder > 0 && l_expired[holder - 1] && !l_ended[holder - 1] ->
		end_lease(holder - 1, EXPIRED);
		holder = 0;
#ifdef RECONCILE
		undecided = true;
#ifndef SPLIT
		/* ExpireLeases returned on_expiry = reconcile: attention.OpenTx
		 * (HoldItemForAttention) in the same transaction. */
		held = true
#else
		skip
#endif
#else
		skip
#endif
	:: else -> skip
	fi
}

proctype Worker() {
	byte me;   /* the lease this worker holds (index) */
	byte tok;  /* its epoch: the fencing token it hands the destination */
	bool blocked; /* its completion was refused as blocked; lease still held */

end_claim:
	/* Claim: ExpireLeases, then ClaimItem (FOR UPDATE SKIP LOCKED on a
	 * ready item, epoch + 1, a new lease row) in one transaction. It waits
	 * while the item is held by a live lease (a claimer that finds the row
	 * locked skips it and finds nothing ready; an item with unmet work is
	 * not ready). */
	atomic {
		!done && !unmet && nleases < NL &&
#ifdef RECONCILE
		((holder == 0 && !held) || (holder > 0 && l_expired[holder - 1] && !l_ended[holder - 1])) ->
#else
		(holder == 0 || (l_expired[holder - 1] && !l_ended[holder - 1])) ->
#endif
		reap();
#ifdef RECONCILE
		/* ClaimItem takes only a ready item (open_attention = 0). */
		if
		:: held -> goto end_claim  /* nothing ready; the reap commits */
		:: else -> skip
		fi;
		if
		:: undecided -> granted_undecided = true
		:: else -> skip
		fi;
#endif
		me = nleases;
		nleases++;
		epoch++;
		l_epoch[me] = epoch;
		holder = me + 1;
		tok = epoch
	}

work:
	/* HeartbeatLease, at most once (more renewals add no behaviour: the
	 * Clock may expire the lease after any of them): the fenced renewal.
	 * Zero rows: the worker learns it lost the lease and claims again. */
	if
	:: atomic {
		if
		:: FENCED(me) ->
#ifdef NOFENCE
			l_expired[me] = false  /* an unfenced renewal revives the lease */
#else
			skip
#endif
		:: else -> goto lost
		fi
	   }
	:: skip
	fi;

	/* The worker has read its input and computed its effect. It may pause
	 * here for any length of time (a GC pause, a stopped process, a
	 * partition): the Clock, the sweeper and other workers run meanwhile. */
paused:
	skip;

	/* The destination's gate, inside the destination's own transaction:
	 * the effect is applied only if the token is not below the resource's
	 * mark, and the mark advances to it when that transaction commits. */
	atomic {
		if
		:: ADMIT(tok) ->
			if
			:: tok < gate_max -> stale_gate = true
			:: else -> skip
			fi;
			if
			:: tok > gate_max -> gate_max = tok
			:: else -> skip
			fi;
			if
			:: tok > hwm -> hwm = tok
			:: else -> skip
			fi
		:: else -> skip  /* refused: the effect is not applied */
		fi
	}

	/* EndLease: the fenced completion (or release) and the item's side of
	 * it, in one statement. Zero rows: lease_lost; the late report is kept
	 * as an observation and changes nothing. A completion of an item with
	 * unmet work is refused as blocked (ADR 0008): nothing changes, the
	 * lease is still held, and the worker goes on (heartbeat, complete
	 * again, or release). */
	atomic {
		blocked = false;
		if
		:: FENCED(me) ->
			if
			:: STALE(me) -> stale_wg = true
			:: else -> skip
			fi;
			if
			:: FINISHABLE ->
				if
				:: unmet -> done_early = true
				:: else -> skip
				fi;
				end_lease(me, COMPLETED);
				done = true;
				completions++
			:: !FINISHABLE -> blocked = true
			:: end_lease(me, RELEASED)
			fi;
			if
			:: !blocked && holder == me + 1 -> holder = 0
			:: else -> skip
			fi
		:: else -> skip
		fi
	};
	if
	:: blocked -> goto work
	:: else -> goto end_claim
	fi;

lost:
	/* A worker that learned it lost its lease stops, and claims again. */
	goto end_claim
}

/* The database clock passes the current lease's expires_at (at any time:
 * a lease that is not renewed in time, or a renewal that was too late). */
active proctype Clock() {
end:
	do
	:: atomic { holder > 0 && !l_expired[holder - 1] && !l_ended[holder - 1] ->
		l_expired[holder - 1] = true }
	od
}

/* A person changes the plan: adds a dependency on an unfinished item, or
 * a child, to the item (leased or not; never to a finished one), and that
 * work is finished later. */
active proctype Planner() {
end:
	do
	:: atomic { !done && !unmet -> unmet = true }
	:: atomic { unmet -> unmet = false }
	od
}

/* lease.Sweeper: ExpireLeases on its own. */
active proctype Sweeper() {
end:
	do
	:: atomic { holder > 0 && l_expired[holder - 1] && !l_ended[holder - 1] -> reap() }
	od
}

#ifdef RECONCILE
#ifdef SPLIT
/* The broken variant: the request is opened by a later transaction. */
active proctype Holder() {
end:
	do
	:: atomic { undecided && !held && !done -> held = true }
	od
}
#endif

/* A person (or an admin token acting as reconciler) decides: attention.Decide
 * (CloseAttention, ReleaseItemFromAttention, then for done graph.FinishTx,
 * for cancel graph.CancelTx), one transaction. */
active proctype Person() {
end:
	do
	:: atomic { held -> held = false; undecided = false }              /* retry */
	:: atomic { held && !done && DECIDE_FINISHABLE -> held = false; undecided = false;
	            if
	            :: unmet -> done_early = true
	            :: else -> skip
	            fi;
	            done = true; completions++ }                           /* done */
	:: atomic { held && !done -> held = false; undecided = false;
	            done = true }                                          /* cancel */
	od
}
#define I5 (!granted_undecided)
#else
#define I5 true
#endif

/* The invariants, over at most 4 leases (NL <= 4). */
#define OPEN(i) ((i) < nleases && !l_ended[i])
#define HOLDERS (OPEN(0) + OPEN(1) + OPEN(2) + OPEN(3))
#define OUTCOME(i) (l_outcomes[i] <= 1 && (!l_ended[i] || l_outcome[i] != NONE))
#define ONE_OUTCOME (OUTCOME(0) && OUTCOME(1) && OUTCOME(2) && OUTCOME(3))
#define I1 (HOLDERS <= 1)
#define I2 (!stale_wg)
#define I3 (!stale_gate)
#define I4 (ONE_OUTCOME && completions <= 1)
#define I6 (!done_early)

/* The monitor: its one step is enabled in any reachable state that breaks
 * an invariant, and then the assertion names which. */
active proctype Invariants() {
end:
	atomic {
		!(I1 && I2 && I3 && I4 && I5 && I6) ->
		assert(I1);
		assert(I2);
		assert(I3);
		assert(I4);
		assert(I5);
		assert(I6)
	}
}

init {
	byte i;
	atomic {
		for (i : 1 .. W) {
			run Worker()
		}
	}
}
