package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/railyard-io/railyard/internal/cni/state"
	"github.com/railyard-io/railyard/internal/containerdev"
	"github.com/railyard-io/railyard/internal/kubeevent"
)

// DefaultCNIStateDir is railyard-cni's default stateDir
// (internal/cni/config.DefaultStateDir), whose attachment records the
// agent reads for the pods' RoCE GID indexes.
const DefaultCNIStateDir = "/var/lib/cni/railyard"

// ReasonGIDIndexMismatch is the reason of the Warning Event the agent
// records on a pod whose HCAs have their RoCE v2 GIDs at different
// indexes.
const ReasonGIDIndexMismatch = "RoCEGIDIndexMismatch"

// eventComponent is the source of the agent's Events.
const eventComponent = "railyard-agent"

// gidEvents finds, in railyard-cni's attachment records, the pod
// sandboxes whose HCAs have their RoCE v2 GIDs at different indexes
// (NCCL_IB_GID_INDEX is one index for all of them) and says so once per
// sandbox: one line in the agent's log and one Warning Event on the pod,
// each naming every HCA's index and the fix. railyard-cni, which has no
// Kubernetes client, finds the mismatch at ADD and records each
// attachment's index and pod (internal/cni/gid.go); the agent, which has
// one, tells the pod.
type gidEvents struct {
	dirs []string
	log  *slog.Logger
	// kube is nil without an API server: the log line only.
	kube kubernetes.Interface
	node string
	now  func() time.Time
	// done is what was said of each sandbox still on record (by
	// container ID); entries go with the sandbox's records.
	done map[string]*gidSaid
}

// gidSaid is what was said of one sandbox's mismatch.
type gidSaid struct {
	logged bool
	// evented: the Event is recorded, or can never be (no pod in the
	// records, no API server, not allowed, the pod gone).
	evented bool
}

// sandboxGIDs is one pod sandbox's HCAs with a RoCE v2 GID index, and
// its pod where a record names it.
type sandboxGIDs struct {
	containerID string
	pod         *state.PodRef
	gids        []containerdev.HCAGID
}

// sandboxes groups the records of every state directory by sandbox,
// sorted by container ID. A directory that cannot be read, or records
// that do not decode, are in the error; the others are returned.
func (g *gidEvents) sandboxes() ([]sandboxGIDs, error) {
	by := map[string]*sandboxGIDs{}
	var errs []error
	for _, dir := range g.dirs {
		recs, err := state.Store{Dir: dir}.List()
		if err != nil {
			errs = append(errs, fmt.Errorf("railyard-cni state in %s: %w", dir, err))
		}
		for _, r := range recs {
			if r.GID == nil || r.ContainerID == "" {
				continue
			}
			s := by[r.ContainerID]
			if s == nil {
				s = &sandboxGIDs{containerID: r.ContainerID}
				by[r.ContainerID] = s
			}
			s.gids = append(s.gids, *r.GID)
			if s.pod == nil && r.Pod != nil && r.Pod.Namespace != "" && r.Pod.Name != "" {
				s.pod = r.Pod
			}
		}
	}
	out := make([]sandboxGIDs, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].containerID < out[j].containerID })
	return out, errors.Join(errs...)
}

// check reads the records once and says what is new: each mismatched
// sandbox is logged once, and its Event recorded once (an API error
// other than a refusal or a missing pod is tried again at the next
// check).
func (g *gidEvents) check(ctx context.Context) {
	sbs, err := g.sandboxes()
	if err != nil {
		g.log.Debug("some railyard-cni attachment records cannot be read", "err", err)
	}
	if g.done == nil {
		g.done = map[string]*gidSaid{}
	}
	seen := map[string]bool{}
	for _, s := range sbs {
		seen[s.containerID] = true
		_, cerr := containerdev.CheckGIDIndexes(s.gids)
		var mismatch *containerdev.GIDIndexMismatchError
		if !errors.As(cerr, &mismatch) {
			continue
		}
		said := g.done[s.containerID]
		if said == nil {
			said = &gidSaid{}
			g.done[s.containerID] = said
		}
		if said.evented {
			continue
		}
		pod := "unknown (the records name none: railyard-cni before it recorded the pod, or a runtime that passed no K8S_POD_* in CNI_ARGS)"
		if s.pod != nil {
			pod = s.pod.String()
		}
		if !said.logged {
			said.logged = true
			event := "recording one on the pod"
			switch {
			case s.pod == nil:
				event = "none: the pod is unknown"
			case g.kube == nil:
				event = "none: no API server (chart: cni.podEvents)"
			}
			g.log.Warn("RoCE GID indexes differ across the pod's HCAs", "pod", pod, "sandbox", s.containerID,
				"gids", containerdev.GIDIndexes(s.gids), "event", event, "err", cerr)
		}
		if s.pod == nil || g.kube == nil {
			said.evented = true
			continue
		}
		switch err := g.record(ctx, *s.pod, mismatch.Error()); {
		case err == nil, apierrors.IsForbidden(err), apierrors.IsNotFound(err):
			said.evented = true
			if err != nil {
				g.log.Warn("no Event on the pod for its RoCE GID index mismatch", "pod", pod, "err", err)
			}
		default:
			g.log.Warn("recording the Event of the pod's RoCE GID index mismatch (tried again at the next check)", "pod", pod, "err", err)
		}
	}
	for id := range g.done {
		if !seen[id] {
			delete(g.done, id)
		}
	}
}

// record creates the Warning Event on pod through internal/kubeevent (as
// the rails controller's, internal/railctl), synchronously: a nil error
// means the Event exists, which check's once-only rule needs.
func (g *gidEvents) record(ctx context.Context, pod state.PodRef, msg string) error {
	return kubeevent.Post(ctx, g.kube, kubeevent.Event{
		Object: corev1.ObjectReference{APIVersion: "v1", Kind: "Pod",
			Namespace: pod.Namespace, Name: pod.Name, UID: types.UID(pod.UID)},
		Type: corev1.EventTypeWarning, Reason: ReasonGIDIndexMismatch, Message: msg,
		Source: corev1.EventSource{Component: eventComponent, Host: g.node},
		Time:   g.now(),
	})
}

// watchGIDs checks the records at once and then every interval until ctx
// is done; it returns at once without state directories.
func (g *gidEvents) watch(ctx context.Context, interval time.Duration) {
	if len(g.dirs) == 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		g.check(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// cniStateDirs splits --cni-state-dir's comma-separated list, without
// empty entries or repeats.
func cniStateDirs(list string) []string {
	var out []string
	for _, d := range strings.Split(list, ",") {
		if d = strings.TrimSpace(d); d != "" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}
