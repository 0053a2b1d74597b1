package eventarc

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
)

// MessagePublishedType is the event type of Eventarc's Pub/Sub triggers.
const MessagePublishedType = "google.cloud.pubsub.topic.v1.messagePublished"

// pushBody is what a Pub/Sub push subscription POSTs.
type pushBody struct {
	Subscription string          `json:"subscription"`
	Message      json.RawMessage `json:"message"`
}

// pushMessage is the part of the message the CloudEvent's attributes need.
type pushMessage struct {
	MessageID   string    `json:"messageId"`
	PublishTime time.Time `json:"publishTime"`
}

// PushRelay receives Pub/Sub push deliveries at /push/{topic}/{function} and
// delivers them to Functions/{function} as messagePublished CloudEvents.
type PushRelay struct {
	// Project is the project of the topics.
	Project string
	// Functions is the base URL of the functions, e.g. http://127.0.0.1:8080.
	Functions string
	Sender    *Sender
	Log       *slog.Logger
}

// Endpoint is the push endpoint to configure on topic's subscription for
// function, given the relay's base URL.
func Endpoint(relayBase, topic, function string) string {
	return relayBase + "/push/" + topic + "/" + function
}

// ServeHTTP delivers one push synchronously and answers with the function's
// outcome: a non-2xx answer makes the emulator redeliver with the
// subscription's retry policy, as Pub/Sub does for Eventarc.
func (r *PushRelay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rest, _ := strings.CutPrefix(req.URL.Path, "/push/")
	topic, function, ok := strings.Cut(rest, "/")
	if !ok || topic == "" || function == "" {
		http.Error(w, "want /push/{topic}/{function}", http.StatusNotFound)
		return
	}
	e, err := MessagePublishedEvent(r.Project, topic, req.Body)
	if err != nil {
		// A body that is not a push is dropped: retrying cannot mend it.
		r.Log.Error("pubsub push is malformed; dropped", "topic", topic, "err", err)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	status, err := r.Sender.Send(req.Context(), r.Functions+"/"+function, e)
	if err != nil {
		r.Log.Warn("pubsub delivery failed; the emulator will redeliver", "topic", topic, "function", function, "event", e.ID(), "status", status, "err", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// MessagePublishedEvent turns a push body into the CloudEvent Eventarc
// delivers for it: source //pubsub.googleapis.com/projects/P/topics/T, id the
// message id, data {"message":…,"subscription":…}.
func MessagePublishedEvent(project, topic string, body io.Reader) (event.Event, error) {
	e := event.New()
	raw, err := io.ReadAll(io.LimitReader(body, 16<<20))
	if err != nil {
		return e, err
	}
	var push pushBody
	if err := json.Unmarshal(raw, &push); err != nil || len(push.Message) == 0 {
		return e, fmt.Errorf("not a Pub/Sub push body: %v", err)
	}
	var msg pushMessage
	if err := json.Unmarshal(push.Message, &msg); err != nil {
		return e, fmt.Errorf("push message: %w", err)
	}
	e.SetID(msg.MessageID)
	e.SetType(MessagePublishedType)
	e.SetSource("//pubsub.googleapis.com/projects/" + project + "/topics/" + topic)
	if msg.PublishTime.IsZero() {
		msg.PublishTime = time.Now()
	}
	e.SetTime(msg.PublishTime)
	data, _ := json.Marshal(map[string]any{"message": push.Message, "subscription": push.Subscription})
	if err := e.SetData("application/json", data); err != nil {
		return e, err
	}
	return e, e.Validate()
}
