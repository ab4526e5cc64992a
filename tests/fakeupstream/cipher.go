package fakeupstream

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// cipherPrefix starts every encrypted_content, like OpenAI's Fernet-style tokens.
const cipherPrefix = "gAAAAB"

// errUndecryptable means a ciphertext is not one this fake issued under its secret.
var errUndecryptable = errors.New("fakeupstream: encrypted content could not be decrypted or parsed")

// claims is the plaintext sealed into encrypted_content. It binds the
// reasoning item id, the response id and a hash of the API key.
type claims struct {
	Item     string `json:"item"`
	Response string `json:"resp"`
	KeyHash  string `json:"key"`
	Thought  string `json:"thought"`
}

// sealer encrypts and verifies reasoning ciphertext with AES-256-GCM.
type sealer struct {
	aead   cipher.AEAD
	macKey []byte
}

// newSealer derives the AES key and the nonce key from secret.
func newSealer(secret []byte) (*sealer, error) {
	encKey := derive("fakeupstream/reasoning/aes/v1", secret)
	block, err := aes.NewCipher(encKey)
	if err != nil {
		return nil, fmt.Errorf("fakeupstream: aes key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("fakeupstream: gcm: %w", err)
	}
	return &sealer{aead: aead, macKey: derive("fakeupstream/reasoning/nonce/v1", secret)}, nil
}

// derive returns SHA-256(label || 0 || secret).
func derive(label string, secret []byte) []byte {
	h := sha256.New()
	h.Write([]byte(label))
	h.Write([]byte{0})
	h.Write(secret)
	return h.Sum(nil)
}

// keyHash identifies an API key inside the plaintext without revealing it.
func keyHash(apiKey string) string {
	sum := derive("fakeupstream/apikey/v1", []byte(apiKey))
	return hex.EncodeToString(sum[:16])
}

// seal encrypts c. The nonce is derived from the plaintext and variant, so
// the same claims and variant always give the same bytes (deterministic
// output), while different variants give different, equally valid bytes.
func (s *sealer) seal(c claims, variant string) string {
	pt, err := json.Marshal(c)
	if err != nil {
		// claims holds only strings; Marshal cannot fail.
		pt = []byte("{}")
	}
	mac := hmac.New(sha256.New, s.macKey)
	mac.Write([]byte(variant))
	mac.Write([]byte{0})
	mac.Write(pt)
	nonce := mac.Sum(nil)[:s.aead.NonceSize()]
	out := s.aead.Seal(append([]byte(nil), nonce...), nonce, pt, []byte(cipherPrefix))
	return cipherPrefix + base64.StdEncoding.EncodeToString(out)
}

// open verifies and decrypts a ciphertext issued by seal.
func (s *sealer) open(token string) (claims, error) {
	var c claims
	rest, ok := strings.CutPrefix(token, cipherPrefix)
	if !ok {
		return c, errUndecryptable
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(raw) < s.aead.NonceSize()+s.aead.Overhead() {
		return c, errUndecryptable
	}
	n := s.aead.NonceSize()
	pt, err := s.aead.Open(nil, raw[:n], raw[n:], []byte(cipherPrefix))
	if err != nil {
		return c, errUndecryptable
	}
	if err := json.Unmarshal(pt, &c); err != nil || c.Item == "" || c.Response == "" {
		return claims{}, errUndecryptable
	}
	return c, nil
}

// abbreviate shortens a ciphertext for error messages the way OpenAI does
// ("gAAA...DQ==").
func abbreviate(token string) string {
	if len(token) <= 12 {
		return token
	}
	return token[:4] + "..." + token[len(token)-4:]
}
