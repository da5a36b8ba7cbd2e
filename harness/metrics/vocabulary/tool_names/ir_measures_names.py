"""ir_measures' measure names as :mod:`harness.metrics.vocabulary.names` reads them: each name's
measure, the parameters ir_measures gives it, and which backend's convention it implies."""

from __future__ import annotations

__all__ = ["IRM_NAMES", "IRM_OWN", "IRM_TREC", "IRM_CWL", "IRM_PARAMS", "IRM_NDEVAL",
           "IRM_NO_CUTOFF"]

IRM_NAMES = {"nDCG": "ndcg", "NDCG": "ndcg", "AP": "ap", "MAP": "ap", "P": "precision",
              "R": "recall", "RR": "rr", "MRR": "rr", "SDCG": "mndcg", "ERR": "err",
              "Judged": "judged", "Success": "success", "Rprec": "rprec", "Bpref": "bpref",
              "BPref": "bpref", "RBP": "rbp", "IPrec": "iprec",
              # pytrec_eval's set measures and counts, infAP
              "SetP": "set_p", "SetRelP": "set_relative_p", "SetR": "set_recall",
              "SetF": "set_f", "SetAP": "set_ap", "NumRet": "num_ret",
              "NumRelRet": "num_rel_ret", "NumRel": "num_rel", "NumQ": "query_count",
              "infAP": "infap",
              # cwl_eval's C/W/L measures
              "BPM": "bpm", "INST": "inst", "INSQ": "insq", "NERR8": "nerr8",
              "NERR9": "nerr9", "NERR10": "nerr10", "NERR11": "nerr11",
              # ir_measures' own compatibility measure
              "Compat": "compat",
              # pyndeval's intent-aware measures (subtopic judgments)
              "ERR_IA": "err_ia", "nERR_IA": "nerr_ia", "alpha_DCG": "alpha_dcg",
              "alpha_nDCG": "alpha_ndcg", "NRBP": "nrbp", "nNRBP": "nnrbp", "AP_IA": "ap_ia",
              "MAP_IA": "ap_ia", "P_IA": "p_ia", "StRecall": "strecall"}
IRM_OWN = {"rel", "dcg", "gains", "max_rel", "min_rel", "judged_only", "relative", "T"}
IRM_TREC = {"nDCG", "NDCG", "AP", "MAP", "P", "R", "RR", "MRR", "Rprec", "Bpref", "BPref",
             "Success", "IPrec", "SetP", "SetRelP", "SetR", "SetF", "SetAP", "NumRet",
             "NumRelRet", "NumRel", "NumQ", "infAP"}
#: cwl_eval's measures: gains (clip(rel, min_rel, max_rel) - min_rel) / (max_rel - min_rel),
#: max_rel required, ties in the run's order
IRM_CWL = {"BPM", "INST", "INSQ", "NERR8", "NERR9", "NERR10", "NERR11"}
#: ir_measures' parameters of the names added for issue 21 (the others keep their checks)
IRM_PARAMS = {"SetP": {"rel", "relative", "judged_only"}, "SetRelP": {"rel", "judged_only"},
               "SetR": {"rel"}, "SetF": {"rel", "beta", "judged_only"},
               "SetAP": {"rel", "judged_only"}, "NumRet": {"rel"}, "NumRelRet": {"rel"},
               "NumRel": {"rel"}, "NumQ": set(), "infAP": {"rel"}, "Bpref": {"rel"},
               "BPref": {"rel"}, "BPM": {"cutoff", "T", "min_rel", "max_rel"},
               "INST": {"T", "min_rel", "max_rel"}, "INSQ": {"T", "min_rel", "max_rel"},
               "NERR8": {"cutoff", "min_rel", "max_rel"},
               "NERR9": {"cutoff", "min_rel", "max_rel"},
               "NERR10": {"p", "min_rel", "max_rel"}, "NERR11": {"T", "min_rel", "max_rel"},
               "Compat": {"p", "normalize"},
               **dict.fromkeys(("ERR_IA", "nERR_IA", "P_IA"), {"cutoff", "rel",
                                                              "judged_only"}),
               **dict.fromkeys(("alpha_DCG", "alpha_nDCG"), {"cutoff", "rel", "alpha",
                                                            "judged_only"}),
               **dict.fromkeys(("NRBP", "nNRBP"), {"rel", "alpha", "beta"}),
               **dict.fromkeys(("AP_IA", "MAP_IA"), {"rel", "judged_only"}),
               "StRecall": {"cutoff", "rel"}}
#: pyndeval's measures: names only ir_measures writes (ties by docid ascending)
IRM_NDEVAL = {"ERR_IA", "nERR_IA", "alpha_DCG", "alpha_nDCG", "NRBP", "nNRBP", "AP_IA",
               "MAP_IA", "P_IA", "StRecall"}
#: the names whose measures take a cut-off in ir_measures (others refuse @k)
IRM_NO_CUTOFF = {n for n, ps in IRM_PARAMS.items() if "cutoff" not in ps}
