// Package kubeevent is Railyard's one way to write a Kubernetes Event
// (core/v1): the agent's Warning on a pod whose HCAs disagree on their
// RoCE GID index (internal/agent) and the rails controller's Events on a
// job (internal/railctl) both go through Post.
//
// The rules, each as client-go or the API server has it:
//
//   - Name: the involved object's name and the time in nanoseconds,
//     "<name>.<unixnano hex>", or a UUID where that is no valid name,
//     by client-go's own util.GenerateEventName, as its event recorder
//     names its Events (k8s.io/client-go/tools/record, event.go,
//     recorderImpl.makeEvent).
//   - Namespace: the object's, or "default" for a cluster-scoped object
//     (makeEvent).
//   - Source, ReportingController (the source's component) and
//     ReportingInstance (its host), Count 1, FirstTimestamp and
//     LastTimestamp the Event's time (makeEvent and generateEvent).
//   - Message: at most MaxMessage bytes, the API server's NoteLengthLimit
//     (k8s.io/kubernetes pkg/apis/core/validation/events.go). The server
//     holds a core/v1 Event without an eventTime, as these are, to no
//     limit (legacyValidateEvent checks the message only for Events with
//     one), but events.k8s.io/v1 does, and kube-scheduler cuts its
//     messages to it (pkg/scheduler/schedule_one.go, truncateMessage):
//     a longer message is cut, at a UTF-8 character boundary, to end in
//     " ..." within the limit, as truncateMessage ends it.
//
// Post is synchronous on purpose: it returns the Create's error, so its
// caller knows whether the Event exists. The agent says a pod's GID
// mismatch once and tries again after an API error, which needs that
// answer. client-go's broadcaster (tools/record) queues an Event and
// sends it later, dropping it when its queue is full or after its
// retries, and tells its caller nothing; so it is not used here. Nor is
// its correlator (aggregation, spam filter): Railyard's Events are few
// (one per sandbox, one per template).
package kubeevent
