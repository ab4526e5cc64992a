package fakeupstream

import (
	"fmt"
	"net/http"
)

// Reasons appended to invalid_encrypted_content messages.
const (
	reasonUndecryptable = "Encrypted content could not be decrypted or parsed."
	reasonItemMismatch  = "Encrypted content item_id did not match the target item id."
	reasonOtherKey      = "Encrypted content was not issued for this organization."
)

// verifyReasoning checks every reasoning (and item_reference) input item
// against the ciphertext this fake issued, in input order, and returns the
// items that verified.
func (s *Server) verifyReasoning(items []inputItem, apiKey string) ([]ReplayedReasoning, *apiError) {
	var out []ReplayedReasoning
	kh := keyHash(apiKey)
	for i, it := range items {
		switch it.Type {
		case "item_reference":
			return nil, notFound(it.ID)
		case "reasoning":
		default:
			continue
		}
		if it.Encrypted == "" {
			if it.ID != "" {
				return nil, notFound(it.ID)
			}
			return nil, errMissing(path(index("input", i), "encrypted_content"))
		}
		c, err := s.seal.open(it.Encrypted)
		if err != nil {
			return nil, badCiphertext(it, reasonUndecryptable)
		}
		if c.KeyHash != kh {
			return nil, badCiphertext(it, reasonOtherKey)
		}
		if it.ID != "" && it.ID != c.Item {
			return nil, badCiphertext(it, reasonItemMismatch)
		}
		out = append(out, ReplayedReasoning{ID: c.Item, ResponseID: c.Response, WithID: it.ID != ""})
	}
	return out, nil
}

// notFound is OpenAI's 404 for an item id that is not persisted (WIRE §8.2 item 1).
func notFound(id string) *apiError {
	return &apiError{
		Status: http.StatusNotFound,
		Type:   "invalid_request_error",
		Param:  "input",
		Message: fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. "+
			"Try again with `store` set to true, or remove this item from your input.", id),
	}
}

// badCiphertext is OpenAI's 400 invalid_encrypted_content (WIRE §8.2 item 2).
func badCiphertext(it inputItem, reason string) *apiError {
	subject := abbreviate(it.Encrypted)
	if it.ID != "" {
		subject = "for item " + it.ID
	}
	return &apiError{
		Status:  http.StatusBadRequest,
		Type:    "invalid_request_error",
		Code:    "invalid_encrypted_content",
		Message: fmt.Sprintf("The encrypted content %s could not be verified. Reason: %s", subject, reason),
	}
}
