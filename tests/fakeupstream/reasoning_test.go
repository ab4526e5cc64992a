package fakeupstream

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// issued is a reasoning item the fake returned.
type issued struct {
	respID    string
	id        string
	done      string // encrypted_content in output_item.done
	completed string // encrypted_content in response.completed
	added     string // encrypted_content in output_item.added
}

// issue runs a streamed text turn with key and returns its reasoning item.
func issue(t *testing.T, post func(string) (int, []byte), token string) issued {
	t.Helper()
	st, b := post(body("think "+token, true, ""))
	if st != http.StatusOK {
		t.Fatalf("issue: status %d: %s", st, b)
	}
	evs := parseSSE(t, b)
	done, term := streamCheck(t, evs)
	out := terminalOutput(t, term)
	r, _ := term["response"].(map[string]any)
	var added string
	for _, e := range evs {
		if e.Event == "response.output_item.added" {
			it, _ := e.Obj["item"].(map[string]any)
			if str(it, "type") == "reasoning" {
				added = str(it, "encrypted_content")
			}
		}
	}
	return issued{respID: str(r, "id"), id: str(done[0], "id"), done: str(done[0], "encrypted_content"),
		completed: str(out[0], "encrypted_content"), added: added}
}

// replay builds a request that sends a reasoning item back before a user turn.
func replay(item string) string {
	return `{"model":"gpt-5.2","store":false,"include":["reasoning.encrypted_content"],"input":[
	 {"role":"user","content":"first"}, ` + item + `,
	 {"role":"assistant","content":[{"type":"output_text","text":"echo: first","annotations":[]}],"phase":"final_answer"},
	 {"role":"user","content":"second"}]}`
}

// reasoningItem renders a reasoning input item; empty id or enc are omitted.
func reasoningItem(id, enc string) string {
	s := `{"type":"reasoning","summary":[]`
	if id != "" {
		s += `,"id":` + quote(id)
	}
	if enc != "" {
		s += `,"encrypted_content":` + quote(enc)
	}
	return s + "}"
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestReasoningReplay(t *testing.T) {
	s, ts := newTest(t, Options{AltAPIKeys: []string{"sk-other-org-key"}})
	send := func(b string) (int, []byte) { return post(t, ts, b) }
	it := issue(t, send, "")
	if it.done != it.completed || !strings.HasPrefix(it.done, "gAAAAB") {
		t.Fatalf("done and completed ciphertext differ without drift: %q %q", it.done, it.completed)
	}
	if it.added == it.done || strings.HasPrefix(it.done, it.added) == false {
		t.Fatalf("added ciphertext should be an incomplete prefix: %q", it.added)
	}
	tampered := []byte(it.done)
	tampered[len(tampered)/2] ^= 'A' ^ 'B'
	if tampered[len(tampered)/2] == it.done[len(tampered)/2] {
		tampered[len(tampered)/2] = 'Z'
	}

	cases := []struct {
		name     string
		key      string
		body     string
		status   int
		code     any
		param    any
		contains string
		replayed []ReplayedReasoning
	}{
		{"with id", testKey, replay(reasoningItem(it.id, it.done)), 200, nil, nil, "",
			[]ReplayedReasoning{{ID: it.id, ResponseID: it.respID, WithID: true}}},
		{"without id", testKey, replay(reasoningItem("", it.done)), 200, nil, nil, "",
			[]ReplayedReasoning{{ID: it.id, ResponseID: it.respID}}},
		{"store omitted", testKey, strings.Replace(replay(reasoningItem(it.id, it.done)), `"store":false,`, "", 1), 200, nil, nil, "",
			[]ReplayedReasoning{{ID: it.id, ResponseID: it.respID, WithID: true}}},
		{"id without content", testKey, replay(reasoningItem(it.id, "")), 404, nil, "input",
			fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", it.id), nil},
		{"id with null content", testKey, replay(`{"type":"reasoning","id":"` + it.id + `","summary":[],"encrypted_content":null}`), 404, nil, "input", "not found", nil},
		{"neither id nor content", testKey, replay(reasoningItem("", "")), 400, "missing_required_parameter", "input[1].encrypted_content", "", nil},
		{"tampered", testKey, replay(reasoningItem(it.id, string(tampered))), 400, "invalid_encrypted_content", nil,
			"The encrypted content for item " + it.id + " could not be verified. Reason: Encrypted content could not be decrypted or parsed.", nil},
		{"invented", testKey, replay(reasoningItem("", "gAAAABinventedciphertext==")), 400, "invalid_encrypted_content", nil,
			"could not be verified. Reason: Encrypted content could not be decrypted or parsed.", nil},
		{"not base64", testKey, replay(reasoningItem("", "hello")), 400, "invalid_encrypted_content", nil, "could not be decrypted", nil},
		{"incomplete added copy", testKey, replay(reasoningItem(it.id, it.added)), 400, "invalid_encrypted_content", nil, "could not be decrypted", nil},
		{"wrong id", testKey, replay(reasoningItem("rs_minted", it.done)), 400, "invalid_encrypted_content", nil,
			"The encrypted content for item rs_minted could not be verified. Reason: Encrypted content item_id did not match the target item id.", nil},
		{"other key", "sk-other-org-key", replay(reasoningItem(it.id, it.done)), 400, "invalid_encrypted_content", nil, "could not be verified", nil},
		{"duplicate", testKey, replay(reasoningItem(it.id, it.done) + "," + reasoningItem(it.id, it.done)), 400, nil, "input", "Duplicate item found with id " + it.id, nil},
		{"item_reference", testKey, replay(`{"type":"item_reference","id":"` + it.id + `"}`), 404, nil, "input", "not found", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.Reset()
			st, b := postKey(t, ts, c.key, c.body)
			if st != c.status {
				t.Fatalf("status %d, want %d: %s", st, c.status, b)
			}
			reqs := s.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests recorded", len(reqs))
			}
			if c.status == 200 {
				if reqs[0].Rejected != "" || !reflect.DeepEqual(reqs[0].Replayed, c.replayed) {
					t.Fatalf("recorded %+v, want replayed %+v", reqs[0], c.replayed)
				}
				return
			}
			msg, typ, param, code := apiErr(t, b)
			if typ != "invalid_request_error" || code != c.code || param != c.param || !strings.Contains(msg, c.contains) {
				t.Fatalf("error %q %q param %v code %v", msg, typ, param, code)
			}
			want := c.code
			if want == nil {
				want = "not_found"
				if c.status == 400 {
					want = "invalid_request_error"
				}
			}
			if reqs[0].Model != "gpt-5.2" {
				t.Errorf("rejected request lost its model: %+v", reqs[0])
			}
			if reqs[0].Rejected != want || reqs[0].RejectedMessage != msg || reqs[0].Status != c.status {
				t.Fatalf("recorded Rejected %q (%q) status %d", reqs[0].Rejected, reqs[0].RejectedMessage, reqs[0].Status)
			}
		})
	}
}

func TestReasoningBoundToSecretAndKey(t *testing.T) {
	_, tsA := newTest(t, Options{APIKey: "sk-a", Secret: []byte("one")})
	_, tsB := newTest(t, Options{APIKey: "sk-b", Secret: []byte("one")})
	_, tsC := newTest(t, Options{APIKey: "sk-a", Secret: []byte("two")})
	it := issue(t, func(b string) (int, []byte) { return postKey(t, tsA, "sk-a", b) }, "")
	if st, b := postKey(t, tsB, "sk-b", replay(reasoningItem("", it.done))); st != 400 || !strings.Contains(string(b), "not issued for this organization") {
		t.Errorf("other API key, same secret: %d %s", st, b)
	}
	if st, b := postKey(t, tsC, "sk-a", replay(reasoningItem("", it.done))); st != 400 || !strings.Contains(string(b), "could not be decrypted") {
		t.Errorf("same key, other secret: %d %s", st, b)
	}
	if st, b := postKey(t, tsA, "sk-a", replay(reasoningItem(it.id, it.done))); st != 200 {
		t.Errorf("issuing server rejects its own item: %d %s", st, b)
	}
}

func TestDriftCopiesBothVerify(t *testing.T) {
	s, ts := newTest(t, Options{})
	it := issue(t, func(b string) (int, []byte) { return post(t, ts, b) }, "[[drift]]")
	if it.done == it.completed {
		t.Fatal("drift: output_item.done and response.completed carry the same ciphertext")
	}
	for _, enc := range []string{it.done, it.completed} {
		s.Reset()
		if st, b := post(t, ts, replay(reasoningItem(it.id, enc))); st != 200 {
			t.Fatalf("drift copy rejected: %d %s", st, b)
		}
		if r := s.Requests()[0].Replayed; len(r) != 1 || r[0].ID != it.id {
			t.Fatalf("replayed %+v", r)
		}
	}
}

func TestReplayedInInputOrder(t *testing.T) {
	s, ts := newTest(t, Options{})
	send := func(b string) (int, []byte) { return post(t, ts, b) }
	a := issue(t, send, "")
	b := issue(t, send, "")
	s.Reset()
	in := replay(reasoningItem(b.id, b.done) + "," + reasoningItem("", a.done))
	if st, body := post(t, ts, in); st != 200 {
		t.Fatalf("status %d: %s", st, body)
	}
	want := []ReplayedReasoning{{ID: b.id, ResponseID: b.respID, WithID: true}, {ID: a.id, ResponseID: a.respID}}
	if got := s.Requests()[0].Replayed; !reflect.DeepEqual(got, want) {
		t.Fatalf("replayed %+v, want %+v", got, want)
	}
}
