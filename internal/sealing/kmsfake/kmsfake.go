// Package kmsfake is an httptest fake of the Cloud KMS REST API's
// cryptoKeys.encrypt and cryptoKeys.decrypt, typed on the REST client's own
// wire types (google.golang.org/api/cloudkms/v1), so the real client (Tink's
// GCP KMS extension) runs against it with option.WithEndpoint. Google ships
// no KMS emulator; this is what the KMS path of package sealing is tested
// on.
//
// It does what the tests need KMS to do: each key has its own random
// AES-256-GCM key, a ciphertext opens only under the key and the associated
// data it was made with, the CRC32C checksums are checked and returned as
// KMS does, a key can be made to refuse its caller (403, as IAM does for an
// account without cryptoKeyEncrypterDecrypter), and every call is counted.
package kmsfake

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	cloudkms "google.golang.org/api/cloudkms/v1"
)

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	*httptest.Server

	mu      sync.Mutex
	keys    map[string]cipher.AEAD // by key name
	denied  map[string]bool
	encrypt int
	decrypt int
}

// New starts a fake that knows the keys named (projects/…/cryptoKeys/K).
func New(keys ...string) *Server {
	s := &Server{keys: map[string]cipher.AEAD{}, denied: map[string]bool{}}
	for _, k := range keys {
		raw := make([]byte, 32)
		if _, err := rand.Read(raw); err != nil {
			panic(err)
		}
		block, _ := aes.NewCipher(raw)
		s.keys[k], _ = cipher.NewGCM(block)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Deny makes every later call on key fail as IAM fails a caller without
// the permission: 403 PERMISSION_DENIED.
func (s *Server) Deny(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[key] = true
}

// Allow undoes Deny.
func (s *Server) Allow(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.denied, key)
}

// Calls are the encrypt and decrypt calls answered so far.
func (s *Server) Calls() (encrypt, decrypt int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.encrypt, s.decrypt
}

var crc = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) int64 { return int64(crc32.Checksum(b, crc)) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	name, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1/"), ":")
	if r.Method != http.MethodPost || !ok || (method != "encrypt" && method != "decrypt") {
		fail(w, http.StatusNotFound, "NOT_FOUND", "no such method: "+r.Method+" "+r.URL.Path)
		return
	}
	s.mu.Lock()
	key, known := s.keys[name]
	denied := s.denied[name]
	if method == "encrypt" {
		s.encrypt++
	} else {
		s.decrypt++
	}
	s.mu.Unlock()
	switch {
	case denied:
		fail(w, http.StatusForbidden, "PERMISSION_DENIED", "Permission 'cloudkms.cryptoKeyVersions.useTo"+strings.ToUpper(method[:1])+method[1:]+"' denied on resource '"+name+"' (or it may not exist).")
		return
	case !known:
		fail(w, http.StatusNotFound, "NOT_FOUND", name+" not found.")
		return
	}
	if method == "encrypt" {
		var req cloudkms.EncryptRequest
		if !decode(w, r, &req) {
			return
		}
		pt, aad, ok := bytesOf(w, req.Plaintext, req.AdditionalAuthenticatedData)
		if !ok {
			return
		}
		if checksum(pt) != req.PlaintextCrc32c || checksum(aad) != req.AdditionalAuthenticatedDataCrc32c {
			fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "The checksum in field plaintext_crc32c or additional_authenticated_data_crc32c did not match the data.")
			return
		}
		nonce := make([]byte, key.NonceSize())
		_, _ = rand.Read(nonce)
		ct := key.Seal(nonce, nonce, pt, aad)
		reply(w, cloudkms.EncryptResponse{
			Name: name + "/cryptoKeyVersions/1", Ciphertext: base64.StdEncoding.EncodeToString(ct), CiphertextCrc32c: checksum(ct),
			VerifiedPlaintextCrc32c: true, VerifiedAdditionalAuthenticatedDataCrc32c: true,
		})
		return
	}
	var req cloudkms.DecryptRequest
	if !decode(w, r, &req) {
		return
	}
	ct, aad, ok := bytesOf(w, req.Ciphertext, req.AdditionalAuthenticatedData)
	if !ok {
		return
	}
	if len(ct) < key.NonceSize() {
		fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Decryption failed: the ciphertext is invalid.")
		return
	}
	pt, err := key.Open(nil, ct[:key.NonceSize()], ct[key.NonceSize():], aad)
	if err != nil {
		fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Decryption failed: the ciphertext is invalid.")
		return
	}
	reply(w, cloudkms.DecryptResponse{Plaintext: base64.StdEncoding.EncodeToString(pt), PlaintextCrc32c: checksum(pt)})
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload: "+err.Error())
		return false
	}
	return true
}

// bytesOf decodes the request's base64 fields, which the clients send in
// either alphabet.
func bytesOf(w http.ResponseWriter, fields ...string) ([]byte, []byte, bool) {
	var out [2][]byte
	for i, f := range fields {
		b, err := base64.URLEncoding.DecodeString(f)
		if err != nil {
			if b, err = base64.StdEncoding.DecodeString(f); err != nil {
				fail(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid value: not base64.")
				return nil, nil, false
			}
		}
		out[i] = b
	}
	return out[0], out[1], true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, status, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "status": status, "message": message}})
}
