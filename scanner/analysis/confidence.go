package analysis

// How the surfaces say how sure a cause is (Cause.Confidence, confidenceOf): in words, beside
// or after its sentence.

// Hedge is how a line of text (an alert's "Why:", the digest, the CI answer's Markdown and
// JUnit) says how sure a cause is: "medium confidence" or "low confidence"; "" for a high one,
// stated plainly, and for a cause that names no change, whose sentence says why.
func Hedge(confidence string) string {
	if confidence == ConfidenceMedium || confidence == ConfidenceLow {
		return confidence + " confidence"
	}
	return ""
}

// ConfidenceMeaning says what a confidence level means, as the scan page's tag explains it
// (the shares are confidenceOf's); "" for none.
func ConfidenceMeaning(confidence string) string {
	switch confidence {
	case ConfidenceHigh:
		return "High confidence: the changes named account for 60% or more of the metric's change."
	case ConfidenceMedium:
		return "Medium confidence: the changes named account for 30 to 60% of the metric's change; something else moved it too."
	case ConfidenceLow:
		return "Low confidence: the changes named account for less than 30% of the metric's change; the largest change found, not the whole story."
	}
	return ""
}
