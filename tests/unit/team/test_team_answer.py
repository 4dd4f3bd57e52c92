from grse_graph.team.answer import extract_answer


def test_takes_text_after_last_answer_line() -> None:
    text = "Passage 3 says so.\nCandidate answer: Tamsford\nAnswer: Osterlin"
    assert extract_answer(text) == "Osterlin"


def test_accepts_final_answer_bold_and_quotes() -> None:
    assert extract_answer('reasoning\n**Final Answer:** "Osterlin"') == "Osterlin"


def test_whole_text_without_answer_line() -> None:
    assert extract_answer("  Osterlin \n") == "Osterlin"


def test_answer_inside_a_sentence_is_not_an_answer_line() -> None:
    assert extract_answer("The answer: maybe") == "The answer: maybe"
