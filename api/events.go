package api

import (
	"net/url"
	"strconv"
	"time"
)

// EventsQuery is what GET /v1/events takes, as query parameters: since=T
// (RFC 3339) first sends the records svcrun still keeps from T on, last=N
// only the last N of those, follow=false ends the answer after them
// instead of streaming the new records.
type EventsQuery struct {
	Since    time.Time
	Last     int
	NoFollow bool
}

// Encode is q as a query string ("" for the zero query).
func (q EventsQuery) Encode() string {
	v := url.Values{}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.Format(time.RFC3339Nano))
	}
	if q.Last > 0 {
		v.Set("last", strconv.Itoa(q.Last))
	}
	if q.NoFollow {
		v.Set("follow", "false")
	}
	return v.Encode()
}

// EventsQueryError is a query parameter of GET /v1/events that cannot be
// read.
type EventsQueryError struct{ Param, Value, Reason string }

func (e *EventsQueryError) Error() string {
	return e.Param + " " + strconv.Quote(e.Value) + ": " + e.Reason
}

// ParseEventsQuery reads the query parameters of GET /v1/events.
func ParseEventsQuery(v url.Values) (EventsQuery, error) {
	var q EventsQuery
	if s := v.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return q, &EventsQueryError{"since", s, "not an RFC 3339 time, such as 2026-12-01T17:00:00Z"}
		}
		q.Since = t
	}
	if s := v.Get("last"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return q, &EventsQueryError{"last", s, "not a count of 1 or more"}
		}
		q.Last = n
	}
	if s := v.Get("follow"); s != "" {
		f, err := strconv.ParseBool(s)
		if err != nil {
			return q, &EventsQueryError{"follow", s, "not true or false"}
		}
		q.NoFollow = !f
	}
	return q, nil
}
