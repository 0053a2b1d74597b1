package computefake

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Serial port output, as instances.getSerialPortOutput answers it
// (https://cloud.google.com/compute/docs/reference/rest/v1/instances/getSerialPortOutput):
// "Returns the last 1 MB of serial port output". start is "the starting
// byte position of the output to return"; "if the amount of serial console
// output exceeds the size of the buffer (1 MB), the oldest output is
// discarded ... If the requested start position refers to discarded
// output, the start position is adjusted to the oldest output still
// available, and the adjusted start position is returned as the start
// property value"; a negative start is "the most recent number of bytes
// written", bounded by the buffer; next is "the position of the next byte
// of content, regardless of whether the content exists, following the
// output returned in the contents property". The fake reads 1 MB as
// SerialPortBuffer bytes, and answers a start past the end with no
// contents and next = start, which the page does not cover.

// SerialPortBuffer is how many of the most recent bytes of a port the fake
// keeps.
const SerialPortBuffer = 1 << 20

var serialRoutes = []route{
	{http.MethodGet, projectPath(`zones/([^/]+)/instances/([^/]+)/serialPort`), func(s *Server, w http.ResponseWriter, r *http.Request, m []string) {
		s.getSerialPortOutput(w, r, m[0], m[1], m[2])
	}},
}

// serialBuffer is what the fake kept of one port: the bytes from position
// start on.
type serialBuffer struct {
	start int64
	data  []byte
}

// AppendSerial writes text to an instance's serial port 1, as its console
// would. It panics on an instance the fake does not have, a mistake of the
// test.
func (s *Server) AppendSerial(zone, name, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := zone + "/" + name
	if _, ok := s.instances[id]; !ok {
		panic(fmt.Sprintf("computefake: AppendSerial on %s, which is no instance", id))
	}
	b := s.serial[id]
	if b == nil {
		b = &serialBuffer{}
		s.serial[id] = b
	}
	b.data = append(b.data, text...)
	if over := len(b.data) - SerialPortBuffer; over > 0 {
		b.data = append([]byte(nil), b.data[over:]...)
		b.start += int64(over)
	}
}

func (s *Server) getSerialPortOutput(w http.ResponseWriter, r *http.Request, project, zone, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused(w, "serialPort") {
		return
	}
	id := zone + "/" + name
	if _, ok := s.instances[id]; !ok {
		writeError(w, notFound(project, zone, name))
		return
	}
	q := r.URL.Query()
	port := 1
	if p := q.Get("port"); p != "" {
		// Ports 1 to 4, as gcloud's --port documents them; the fake's 400
		// for others is its assumption.
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 4 {
			writeError(w, invalid("Invalid value for field 'port': '%s'. Must be between 1 and 4.", p))
			return
		}
		port = n
	}
	var start int64
	if v := q.Get("start"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, invalid("Invalid value for field 'start': '%s'.", v))
			return
		}
		start = n
	}
	b := &serialBuffer{}
	if port == 1 && s.serial[id] != nil {
		b = s.serial[id]
	}
	end := b.start + int64(len(b.data))
	if start < 0 {
		start += end
	}
	start = max(start, b.start)
	contents, next := "", start
	if start <= end {
		contents, next = string(b.data[start-b.start:]), end
	}
	writeMessage(w, &computepb.SerialPortOutput{
		Kind: proto.String("compute#serialPortOutput"),
		// The buffer may begin inside a character; JSON cannot carry half
		// of one.
		Contents: proto.String(strings.ToValidUTF8(contents, "\uFFFD")),
		Start:    proto.Int64(start),
		Next:     proto.Int64(next),
		SelfLink: proto.String(link(project, "zones", zone, "instances", name, "serialPort")),
	})
}
