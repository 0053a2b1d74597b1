package computefake

import (
	"fmt"
	"net/http"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// OperationError is a failure that Compute reports in an operation rather
// than in the HTTP answer of the request that started it. "Whenever an API
// request is successfully initiated, it returns an HTTP 200 status code ...
// you can receive a 200, but the operation might not be complete yet or the
// operation might have failed"
// (https://cloud.google.com/compute/docs/api/best-practices). A zone out of
// capacity is the common case: the insert answers a RUNNING operation, the
// instance is never found, and the operation ends with
// ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS
// (https://github.com/googleapis/nodejs-compute/issues/377); quota the
// same way ("Quota exceeded: If the following API response fields are
// present when you poll the operation",
// https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-bulk-vm-creation).
//
// A source image that does not exist is not one of these: Compute refuses
// that insert in its HTTP answer, 404 notFound "The resource
// 'projects/debian-cloud/global/images/family/debian-10' was not found"
// (https://github.com/googleapis/google-cloud-java/pull/11032); inject it
// with Fail("insert", ...).
type OperationError struct {
	// Code is the operation's error.errors[].code, e.g. QUOTA_EXCEEDED or
	// ZONE_RESOURCE_POOL_EXHAUSTED.
	Code string
	// Message is error.errors[].message.
	Message string
	// HTTPStatus is the operation's httpErrorStatusCode. Zero takes the
	// status Compute answers the same failure with when it refuses a
	// request outright (403 for quota, 503 for capacity, from the bulk
	// page above; 404 for RESOURCE_NOT_FOUND; 400 otherwise): the fake's
	// assumption, as no page lists an operation's status per code.
	HTTPStatus int
	// Details are error.errors[].errorDetails, such as the quotaInfo of a
	// QUOTA_EXCEEDED.
	Details []*computepb.ErrorDetails
}

// Stockout is the error of an insert into a zone without capacity, in the
// words of
// https://cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability.
func Stockout(project, zone string) OperationError {
	return OperationError{
		Code: "ZONE_RESOURCE_POOL_EXHAUSTED",
		Message: fmt.Sprintf("The zone 'projects/%s/zones/%s' does not have enough resources available to fulfill the request. "+
			"Try a different zone, or try again later.", project, zone),
	}
}

// QuotaExceeded is the error of an insert past a regional quota, metric
// being the quota's name (CPUS, IN_USE_ADDRESSES). Its errorDetails carry
// the quotaInfo the Operation reference documents; the metric and limit
// names Compute puts there are the fake's guess.
func QuotaExceeded(metric, region string, limit float64) OperationError {
	return OperationError{
		Code:    "QUOTA_EXCEEDED",
		Message: fmt.Sprintf("Quota '%s' exceeded. Limit: %.1f in region %s.", metric, limit, region),
		Details: []*computepb.ErrorDetails{{QuotaInfo: &computepb.QuotaExceededInfo{
			MetricName: proto.String("compute.googleapis.com/" + strings.ToLower(metric)),
			LimitName:  proto.String(metric + "-per-project-region"),
			Dimensions: map[string]string{"region": region},
			Limit:      proto.Float64(limit),
		}}},
	}
}

// insertFailure makes inserts fail in their operation: the next left ones
// (in zone, or anywhere when zone is ""), or every one in zone when left
// is negative.
type insertFailure struct {
	zone string
	left int
	err  OperationError
}

// FailInserts makes the next n instance inserts in zone (in any zone when
// zone is "") answer a RUNNING operation that Settle ends with e, and
// create no instance.
func (s *Server) FailInserts(zone string, n int, e OperationError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.insertFailures = append(s.insertFailures, &insertFailure{zone: zone, left: n, err: e})
}

// FailEveryInsert makes every instance insert in zone fail as FailInserts
// does, until ClearInsertFailures: a zone out of capacity.
func (s *Server) FailEveryInsert(zone string, e OperationError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.insertFailures = append(s.insertFailures, &insertFailure{zone: zone, left: -1, err: e})
}

// ClearInsertFailures drops every failure FailInserts and FailEveryInsert
// set up.
func (s *Server) ClearInsertFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.insertFailures = nil
}

// takeInsertFailure returns how an insert into zone is to fail, if it is:
// a counted failure first, in the order they were set up. Called with s.mu
// held.
func (s *Server) takeInsertFailure(zone string) *OperationError {
	var every *OperationError
	for i, f := range s.insertFailures {
		switch {
		case f.zone != "" && f.zone != zone:
		case f.left < 0:
			if every == nil {
				every = &f.err
			}
		default:
			f.left--
			if f.left == 0 {
				s.insertFailures = append(s.insertFailures[:i:i], s.insertFailures[i+1:]...)
			}
			return &f.err
		}
	}
	return every
}

// fail writes e into a finished operation: error.errors[], and the HTTP
// status and message, which the Operation reference gives as "a 404 means
// the resource was not found" and "such as NOT FOUND".
func fail(op *computepb.Operation, e OperationError) {
	status := e.HTTPStatus
	if status == 0 {
		switch {
		case e.Code == "QUOTA_EXCEEDED":
			status = http.StatusForbidden
		case strings.HasPrefix(e.Code, "ZONE_RESOURCE_POOL_EXHAUSTED"):
			status = http.StatusServiceUnavailable
		case e.Code == "RESOURCE_NOT_FOUND":
			status = http.StatusNotFound
		default:
			status = http.StatusBadRequest
		}
	}
	op.Error = &computepb.Error{Errors: []*computepb.Errors{{
		Code: proto.String(e.Code), Message: proto.String(e.Message), ErrorDetails: e.Details,
	}}}
	op.HttpErrorStatusCode = proto.Int32(int32(status))
	op.HttpErrorMessage = proto.String(strings.ToUpper(http.StatusText(status)))
}
