package pgio

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Limits of the Postgres numeric type, which holds jsonb numbers: the
// leading significant digit is at most at 10^131071 and a number has at most
// 16383 digits after the decimal point (counting trailing zeros).
const (
	maxNumericLeadExp = 131071
	maxNumericScale   = 16383
	maxNumericExp     = 1<<30 - 1 // Postgres refuses an exponent this large or larger
)

// checkJSON reports why b is not a value Postgres accepts as jsonb, or nil.
//
// It refuses what encoding/json refuses (including an empty or all-space
// value), invalid UTF-8, and three things JSON allows but jsonb does not: the
// escape \u0000 (jsonb strings are Postgres text, which cannot hold NUL), an
// unpaired UTF-16 surrogate escape, and a number outside the range of
// Postgres numeric (see maxNumericLeadExp and maxNumericScale).
func checkJSON(b []byte) error {
	if !utf8.Valid(b) {
		return invalidJSON(b, errors.New("not valid UTF-8"))
	}
	if !json.Valid(b) {
		if len(trimSpace(b)) == 0 {
			return errors.New("invalid JSON: empty value")
		}
		var v any
		return invalidJSON(b, json.Unmarshal(b, &v)) // for the position of the error
	}
	// b is valid JSON: outside strings, digits only occur in numbers.
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			j, err := checkString(b, i)
			if err != nil {
				return invalidJSON(b, err)
			}
			i = j
		case c == '-' || '0' <= c && c <= '9':
			j, err := checkNumber(b, i)
			if err != nil {
				return invalidJSON(b, err)
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

// checkString checks the escapes of the valid JSON string starting at b[i]
// (the opening quote) and returns the index after its closing quote.
func checkString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); {
		switch b[j] {
		case '"':
			return j + 1, nil
		case '\\':
			if b[j+1] != 'u' {
				j += 2
				continue
			}
			r := hex4(b[j+2 : j+6])
			switch {
			case r == 0:
				return 0, errors.New(`\u0000 is not allowed: Postgres text (and so jsonb) cannot hold a NUL character`)
			case 0xD800 <= r && r < 0xDC00:
				if j+11 < len(b) && b[j+6] == '\\' && b[j+7] == 'u' {
					if lo := hex4(b[j+8 : j+12]); 0xDC00 <= lo && lo < 0xE000 {
						j += 12
						continue
					}
				}
				return 0, fmt.Errorf(`\u%04x is a high surrogate not followed by a low surrogate escape; Postgres jsonb refuses it`, r)
			case 0xDC00 <= r && r < 0xE000:
				return 0, fmt.Errorf(`\u%04x is a low surrogate not preceded by a high surrogate escape; Postgres jsonb refuses it`, r)
			}
			j += 6
		default:
			j++
		}
	}
	return len(b), nil // unreachable for valid JSON
}

func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// checkNumber checks that the valid JSON number starting at b[i] fits Postgres
// numeric and returns the index after it.
func checkNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	intStart := i
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	intDigits := b[intStart:i]
	var fracDigits []byte
	if i < len(b) && b[i] == '.' {
		i++
		f := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		fracDigits = b[f:i]
	}
	var exp int64
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		neg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			neg = b[i] == '-'
			i++
		}
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			if exp <= maxNumericExp {
				exp = exp*10 + int64(b[i]-'0')
			}
			i++
		}
		if exp >= maxNumericExp {
			return 0, fmt.Errorf("number %s: the exponent is beyond what Postgres numeric accepts", clip(b[start:i]))
		}
		if neg {
			exp = -exp
		}
	}
	if scale := int64(len(fracDigits)) - exp; scale > maxNumericScale {
		return 0, fmt.Errorf("number %s has %d digits after the decimal point; Postgres numeric (and so jsonb) holds at most %d", clip(b[start:i]), scale, maxNumericScale)
	}
	// The decimal exponent of the leading significant digit.
	lead, found := int64(len(intDigits)-1), false
	for _, d := range intDigits {
		if d != '0' {
			found = true
			break
		}
		lead--
	}
	if !found {
		for _, d := range fracDigits {
			if d != '0' {
				found = true
				break
			}
			lead--
		}
	}
	if found && lead+exp > maxNumericLeadExp {
		return 0, fmt.Errorf("number %s is too large for Postgres numeric (and so jsonb): at most 10^%d", clip(b[start:i]), maxNumericLeadExp+1)
	}
	return i, nil
}

func invalidJSON(b []byte, err error) error {
	return fmt.Errorf("invalid JSON %s: %w", clip(b), err)
}

// clip quotes b for an error message, cut to 64 bytes.
func clip(b []byte) string {
	const max = 64
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

func trimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
