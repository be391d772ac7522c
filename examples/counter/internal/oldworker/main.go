//go:build linux

// Command oldworker is the old worker of seed 002's cases, a real process
// that the tests of package counter build and run: it claims an item from
// a workgraph server, says so on stdout, stops itself (SIGSTOP) before it
// calls the destination, and once resumed (SIGCONT) adds units to the
// counter destination as its mode says, then tries to complete its lease.
// Its last stdout line is a JSON report of both answers.
//
// Modes: unfenced (no fence at all), fence (the fence token only),
// receipt (the fence token and an operation id).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"syscall"

	"github.com/workgraph-dev/workgraph/client"
	"github.com/workgraph-dev/workgraph/fence"
)

// Report is what the worker prints: one line when claimed, one when done.
type Report struct {
	Event string `json:"event"`
	PID   int    `json:"pid"`
	Lease string `json:"lease,omitempty"`
	Epoch int64  `json:"epoch,omitempty"`
	// Destination is the answer of the destination call.
	DestinationStatus int    `json:"destination_status,omitempty"`
	DestinationCode   string `json:"destination_code,omitempty"`
	Replayed          bool   `json:"replayed,omitempty"`
	// CompleteCode is the problem code workgraph refused the completion
	// with ("" when it was accepted).
	CompleteCode string `json:"complete_code,omitempty"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "oldworker:", err)
		os.Exit(1)
	}
}

func run() error {
	server := flag.String("server", "", "workgraph URL")
	token := flag.String("token", "", "agent token")
	project := flag.String("project", "", "project")
	worker := flag.String("worker", "worker-a", "worker label")
	dest := flag.String("dest", "", "counter destination URL")
	mode := flag.String("mode", "fence", "unfenced, fence or receipt")
	units := flag.Int("units", 4, "units to add")
	op := flag.String("op", "add", "operation id, after the item's prefix")
	ttl := flag.Int("lease-seconds", 5, "lease time to live")
	flag.Parse()

	ctx := context.Background()
	wg, err := client.New(*server, *token, client.WithRetries(1))
	if err != nil {
		return err
	}
	cl, err := wg.Claim(ctx, *project, client.ClaimRequest{Worker: *worker, LeaseSeconds: *ttl})
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	out := json.NewEncoder(os.Stdout)
	out.Encode(Report{Event: "claimed", PID: os.Getpid(), Lease: cl.Lease.ID, Epoch: cl.Lease.Epoch})
	if err := pause(); err != nil {
		return err
	}

	rep := Report{Event: "done", PID: os.Getpid(), Lease: cl.Lease.ID, Epoch: cl.Lease.Epoch}
	path := "/counters/" + cl.Item.ID + "/add"
	if *mode == "unfenced" {
		path = "/unfenced" + path
	}
	body, _ := json.Marshal(map[string]int{"units": *units})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, *dest+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if *mode != "unfenced" {
		req.Header.Set(fence.HeaderFence, cl.FenceToken)
	}
	if *mode == "receipt" {
		req.Header.Set(fence.HeaderOperation, cl.Item.ID+"/"+*op)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("destination: %w", err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var problem struct {
		Code string `json:"code"`
	}
	json.Unmarshal(raw, &problem)
	rep.DestinationStatus, rep.DestinationCode = res.StatusCode, problem.Code
	rep.Replayed = res.Header.Get(fence.HeaderReplayed) == "true"

	_, err = wg.Complete(ctx, cl.Lease.ID, client.CompleteRequest{Epoch: cl.Lease.Epoch, Result: json.RawMessage(`{"by":"old worker"}`)})
	var we *client.Error
	switch {
	case errors.As(err, &we):
		rep.CompleteCode = we.Code
	case err != nil:
		return fmt.Errorf("complete: %w", err)
	}
	return out.Encode(rep)
}

// pause stops the whole process (SIGSTOP) between reading the job and
// calling the destination, and returns once it is continued. The signal
// is sent to the calling thread itself: a SIGSTOP sent to the process
// (kill) may be taken by another thread, and this one would run on, and
// reach the destination, before the stop took effect.
func pause() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}
